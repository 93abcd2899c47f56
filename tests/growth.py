"""How a function's cost grows with the size of its input: a tripwire for accidental quadratic work (regex
backtracking, rescanning a text per match) that does not depend on how fast the machine is."""

from __future__ import annotations

import time
from collections.abc import Callable

FACTOR = 8
# Linear work grows about FACTOR times from n to FACTOR * n, quadratic work FACTOR² (64) times. Three times the
# linear growth leaves room for caches and noise and still catches anything quadratic.
LINEAR_BOUND = 3 * FACTOR


def growth(run: Callable[[int], object], n: int, *, repeats: int = 3) -> float:
    """The cost of `run(FACTOR * n)` over the cost of `run(n)`.

    Cost is this thread's CPU time (other processes and the test run's background threads do not count), the
    least of `repeats` runs (the one least disturbed), after one run to warm caches and compiled patterns."""

    def cost(size: int) -> float:
        spent = []
        for _ in range(repeats):
            started = time.thread_time()
            run(size)
            spent.append(time.thread_time() - started)
        return min(spent)

    run(n)
    return cost(FACTOR * n) / max(cost(n), 1e-6)
