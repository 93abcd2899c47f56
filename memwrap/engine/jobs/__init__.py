"""Background work: the one durable queue (queue.py), the worker that claims and runs its jobs (worker.py) and
the one retry policy (retry_policy.py)."""
