"""Tables of the long-session section: markdown (report.md) and the terminal (rich)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from bench.long_session.evidence import HYBRID, MEMWRAP, OVERALL

Table = Callable[[Sequence[str], Sequence[Sequence[str]]], str]

STEP_ORDER = (
    "wall", "total", "embed", "names", "arm.keyword", "arm.semantic", "arm.graph", "arm.temporal", "arms", "fuse",
    "details", "order", "pack", "entities",
)  # fmt: skip


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}"


def recall_header(budgets: Sequence[int]) -> list[str]:
    return ["questions", *(f"memwrap @{b}" for b in budgets), *(f"{HYBRID} @{b}" for b in budgets)]


def recall_rows(systems: dict[str, Any], budgets: Sequence[int]) -> list[list[str]]:
    ours, theirs = systems.get(MEMWRAP, {}), systems.get(HYBRID, {})
    types = sorted(set(ours) | set(theirs), key=lambda t: (t == OVERALL, t))
    rows = []
    for qtype in types:
        n = (ours.get(qtype) or theirs.get(qtype))[str(budgets[0])]["n"]
        rows.append([
            f"{'**overall**' if qtype == OVERALL else qtype} (n={n})",
            *(_pct(ours.get(qtype, {}).get(str(b), {}).get("recall")) for b in budgets),
            *(_pct(theirs.get(qtype, {}).get(str(b), {}).get("recall")) for b in budgets),
        ])  # fmt: skip
    return rows


# The question type whose newest evidence message is its answer (the older ones are what it replaced).
UPDATES = "knowledge-update"


def latest_line(systems: dict[str, Any], budgets: Sequence[int]) -> str | None:
    """How often a knowledge update's newest statement, its answer, is in the block: evidence recall counts the
    statements it replaced as well, which memwrap marks as earlier and puts last on purpose (engine/recall/order.py)."""
    cells = {name: systems.get(name, {}).get(UPDATES) for name in (MEMWRAP, HYBRID)}
    if not all(cells.values()):
        return None
    shown = "; ".join(
        f"{name} " + " / ".join(_pct(cell[str(b)].get("latest_found")) for b in budgets)
        for name, cell in cells.items()
        if cell
    )
    return (
        f"Knowledge updates, the newest statement (the answer) in the block, % @{'/'.join(map(str, budgets))}: {shown}."
    )


THROUGHPUT_HEADER = [
    "retained", "messages", "tokens", "memories", "retain s", "messages/s", "tokens/s", "embedding alone tokens/s",
    "retain / embedding",
]  # fmt: skip


def throughput_rows(throughput: dict[str, Any]) -> list[list[str]]:
    def num(x: float | None, digits: int = 0) -> str:
        return "-" if x is None else f"{x:,.{digits}f}"

    return [
        [
            name, f"{t['messages']:,}", f"{t['message_tokens']:,}", f"{t['memories']:,}", num(t["retain_s"], 1),
            num(t["retain_messages_per_s"], 1), num(t["retain_tokens_per_s"]), num(t["embed_tokens_per_s"]),
            num(t["retain_over_embed"], 2),
        ]
        for name, t in throughput.items()
    ]  # fmt: skip


def _conditions(latency: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    out = []
    for size in latency.get("sizes", []):
        out.append((f"{size['memories']:,} memories", size["quiet"]))
        if "loaded" in size:
            out.append((f"{size['memories']:,}, +{size['load_processes']} busy loops", size["loaded"]))
    return out


def latency_table(latency: dict[str, Any]) -> tuple[list[str], list[list[str]]]:
    conditions = _conditions(latency)
    steps = [s for s in STEP_ORDER if any(s in c["steps_ms"] for _, c in conditions)]
    steps += sorted({s for _, c in conditions for s in c["steps_ms"]} - set(steps))
    rows = []
    for step in steps:
        cells = []
        for _, c in conditions:
            stats = c["steps_ms"].get(step)
            cells.append("-" if not stats else f"{stats['p50']:.1f} / {stats['p95']:.1f}")
        rows.append([step, *cells])
    return ["step (ms, p50 / p95)", *(name for name, _ in conditions)], rows


def markdown_section(long: dict[str, Any], md_table: Table) -> list[str]:
    parts = ["## Long technical sessions", ""]
    budgets = long.get("budgets", [])
    for dataset, systems in long.get("recall", {}).items():
        banks = long["datasets"][dataset]["banks"]
        parts += [
            f"### Evidence recall (%), {dataset}",
            "",
            f"{len(banks)} bank(s), {sum(b['messages'] for b in banks):,} messages, "
            f"{sum(b['tokens'] for b in banks):,} tokens, {sum(b['memories'] for b in banks):,} memories. Share of "
            "labelled evidence messages with at least one chunk in the block (memwrap: its packed block at the "
            "budget; hybrid: chunk texts walked within the budget).",
            "",
            md_table(recall_header(budgets), recall_rows(systems, budgets)),
            "",
            *([line, ""] if (line := latest_line(systems, budgets)) else []),
            "memwrap recall per question, median ms (graph arm): "
            + ", ".join(f"{b['bank']} {b.get('recall_ms_median')} ({b.get('graph_ms_median')})" for b in banks)
            + " (banks retained one after another into one home, each recalled right after its retain).",
            "",
        ]
    if long.get("throughput"):
        parts += [
            "### Retain of long messages",
            "",
            md_table(THROUGHPUT_HEADER, throughput_rows(long["throughput"])),
            "",
        ]
    if long.get("short_turns"):
        s = long["short_turns"]
        alone = (f"; the embedding model alone on the same texts (with their session context): "
                 f"{s['embed_turns_per_s']:.0f} turns/s, retain / embedding {s['retain_over_embed']:.2f}"
                 if s.get("embed_turns_per_s") else "")  # fmt: skip
        parts += [f"Short turns: {s['turns']:,} retained in {s['seconds']} s: **{s['turns_per_s']:.0f} turns/s** "
                  f"(batches of {s['batch']}){alone}.", ""]  # fmt: skip
    latency = long.get("latency")
    if latency and latency.get("sizes"):
        header, rows = latency_table(latency)
        parts += [
            "### Recall latency per step, right after retain",
            "",
            f"Home with {latency['others']} other banks ({latency['other_memories']:,} memories); token_budget 1024; "
            f"{latency['sizes'][0]['quiet']['queries']} distinct queries per column.",
            "",
            md_table(header, rows),
            "",
        ]
    return parts


def print_section(long: dict[str, Any], console: Any) -> None:
    from rich.table import Table as RichTable

    def show(title: str, header: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
        table = RichTable(title=title)
        for col in header:
            table.add_column(col)
        for row in rows:
            table.add_row(*row)
        console.print(table)

    budgets = long.get("budgets", [])
    for dataset, systems in long.get("recall", {}).items():
        show(f"Long sessions: evidence recall (%), {dataset}", recall_header(budgets), recall_rows(systems, budgets))
        if line := latest_line(systems, budgets):
            console.print(line)
    if long.get("throughput"):
        show("Long sessions: retain", THROUGHPUT_HEADER, throughput_rows(long["throughput"]))
    if long.get("latency", {}).get("sizes"):
        header, rows = latency_table(long["latency"])
        show("Long sessions: recall latency per step", header, rows)
