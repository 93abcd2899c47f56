"""Output: a rich table on the terminal, results.json, report.md and recall_vs_budget.png."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.locomo import CATEGORY_NAMES, OVERALL, SCORED_CATEGORIES
from bench.long_session import report as long_report
from bench.multilingual.compare import markdown_section, print_section

MEMWRAP = "memwrap"
GROUPS: tuple[str, ...] = (OVERALL, *(str(c) for c in SCORED_CATEGORIES))
PNG_NAME = "recall_vs_budget.png"


def group_label(group: str) -> str:
    return "overall" if group == OVERALL else f"{group} {CATEGORY_NAMES[int(group)]}"


def ratios(per_system: dict[str, Any], budgets: Sequence[int]) -> dict[str, dict[str, dict[str, float | None]]]:
    """memwrap recall / baseline recall, per baseline, group and budget (None when the baseline scored 0)."""
    if MEMWRAP not in per_system:
        return {}
    out: dict[str, dict[str, dict[str, float | None]]] = {}
    for system, cells in per_system.items():
        if system == MEMWRAP:
            continue
        out[system] = {}
        for group in GROUPS:
            out[system][group] = {}
            for budget in budgets:
                ours = per_system[MEMWRAP][group][str(budget)]["recall"]
                theirs = cells[group][str(budget)]["recall"]
                out[system][group][str(budget)] = round(ours / theirs, 3) if theirs else None
    return out


def write_json(results: dict[str, Any], out: Path) -> Path:
    path = out / "results.json"
    path.write_text(json.dumps(results, indent=2, default=str) + "\n", encoding="utf-8")
    return path


# ------------------------------------------------------------------------------------------- figure


def plot_recall(results: dict[str, Any], out: Path) -> Path | None:
    locomo = results.get("locomo")
    if not locomo or not locomo.get("per_system"):
        return None
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    budgets = locomo["budgets"]
    systems = list(locomo["per_system"])
    fig, axes = plt.subplots(2, len(GROUPS), figsize=(4 * len(GROUPS), 7), sharex=True, sharey="row", squeeze=False)
    for col, group in enumerate(GROUPS):
        for row, metric in enumerate(("recall", "all_found")):
            ax = axes[row][col]
            for system in systems:
                cells = locomo["per_system"][system][group]
                ys = [cells[str(b)][metric] for b in budgets]
                style = {"linewidth": 2.6, "marker": "o", "zorder": 3} if system == MEMWRAP else {"marker": "."}
                ax.plot(budgets, ys, label=system, **style)
            n = locomo["per_system"][systems[0]][group][str(budgets[0])]["n"]
            if row == 0:
                ax.set_title(f"{group_label(group)} (n={n})")
            ax.set_xscale("log", base=2)
            ax.set_xticks(budgets, [str(b) for b in budgets])
            ax.set_ylim(0, 1)
            ax.grid(True, alpha=0.3)
            if row == 1:
                ax.set_xlabel("token budget")
        axes[0][0].set_ylabel("evidence recall")
        axes[1][0].set_ylabel("all evidence found")
    axes[0][0].legend(loc="lower right", fontsize=8)
    fig.suptitle("LoCoMo evidence recall vs context budget (cl100k tokens)")
    fig.tight_layout()
    path = out / PNG_NAME
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


# ------------------------------------------------------------------------------------------- tables (shared rows)


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{100 * x:.1f}"


def _ms(x: float | None) -> str:
    return "-" if x is None else (f"{x:.1f}" if x < 100 else f"{x:.0f}")


def recall_rows(locomo: dict[str, Any], metric: str) -> list[list[str]]:
    """Rows: group, system, one cell per budget (percent)."""
    rows = []
    for group in GROUPS:
        for system, cells in locomo["per_system"].items():
            n = cells[group][str(locomo["budgets"][0])]["n"]
            rows.append(
                [
                    f"{group_label(group)} (n={n})",
                    system,
                    *(_pct(cells[group][str(b)][metric]) for b in locomo["budgets"]),
                ]
            )
    return rows


def ratio_rows(locomo: dict[str, Any]) -> list[list[str]]:
    rows = []
    for baseline, groups in locomo.get("ratios", {}).items():
        for group in GROUPS:
            cells = groups[group]
            rows.append(
                [
                    group_label(group),
                    f"memwrap / {baseline}",
                    *("-" if cells[str(b)] is None else f"{cells[str(b)]:.2f}" for b in locomo["budgets"]),
                ]
            )
    return rows


LATENCY_HEADER = [
    "bank size",
    "retain items/s (batch)",
    "recall p50 / p95 / p99 ms",
    "recall w/o query embedding p50 / p95 / p99 ms",
    "query embedding p50 ms",
    "python RSS MB",
    "postgres PSS MB",
]


def _triple(probe: dict[str, Any] | None) -> str:
    if not probe:
        return "-"
    if probe.get("skipped"):
        return "skipped"
    stats = probe.get("stats_ms")
    if not stats:
        return "-"
    text = f"{_ms(stats['p50'])} / {_ms(stats['p95'])} / {_ms(stats['p99'])}"
    return text + (" (est.)" if probe.get("derived") else "")


def latency_rows(latency: dict[str, Any]) -> list[list[str]]:
    rows = []
    for size in latency.get("sizes", []):
        if size.get("skipped") and not size.get("probes"):
            rows.append([f"{size['size']:,}", "skipped", size["skipped"], "", "", "", ""])
            continue
        probes = size.get("probes", {})
        embed = probes.get("query_embedding", {}).get("stats_ms") or {}
        rate = size.get("retain_items_per_s")
        rows.append(
            [
                f"{size['size']:,}",
                f"{rate:,.0f} ({size['batch_size']})" if rate else "-",
                _triple(probes.get("recall")),
                _triple(probes.get("recall_no_embed")),
                _ms(embed.get("p50")),
                "-" if size.get("rss_mb") is None else f"{size['rss_mb']:,.0f}",
                "-" if size.get("postgres_pss_mb") is None else f"{size['postgres_pss_mb']:,.0f}",
            ]
        )
    return rows


BUILTIN_PROBES = ("recall", "recall_no_embed", "query_embedding")


def extra_probe_rows(latency: dict[str, Any]) -> list[list[str]]:
    """Registered probes beyond the built-ins, plus planned slots nobody has filled yet."""
    rows = []
    seen = set()
    for size in latency.get("sizes", []):
        for name, probe in size.get("probes", {}).items():
            if name in BUILTIN_PROBES:
                continue
            seen.add(name)
            rows.append([name, f"{size['size']:,}", _triple(probe), probe.get("note") or probe.get("skipped") or ""])
    for name, label in latency.get("planned_probes", {}).items():
        if name not in seen:
            rows.append([name, "-", "not measured", f"{label}: no probe registered yet (bench/probes/)"])
    return rows


# ------------------------------------------------------------------------------------------- markdown


def _md_table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def markdown(results: dict[str, Any]) -> str:
    meta = results["meta"]
    parts = [
        "# memwrap benchmark report",
        "",
        f"Run `{meta['run_id']}` on {meta['started']} ({'quick' if meta['quick'] else 'full'}; "
        f"{' + '.join(meta.get('parts', [])) or 'nothing'}): "
        f"{meta['duration_s']:.0f} s on {meta['machine']['cpus']} CPUs, Python {meta['machine']['python']}; "
        f"machine {meta['machine'].get('busy_cpu_percent_before_start', 0):.0f}% busy before the start, load average "
        f"{meta['machine'].get('loadavg_start', ['?'])[0]} at the start and "
        f"{meta['machine'].get('loadavg_end', ['?'])[0]} at the end.",
        f"Command: `{meta['command']}`",
        "",
    ]
    locomo = results.get("locomo")
    if locomo and locomo.get("per_system"):
        budgets = [str(b) for b in locomo["budgets"]]
        parts += [
            "## LoCoMo evidence recall",
            "",
            f"{locomo['questions']} questions (categories 1-4 with evidence) over {len(locomo['conversations'])} "
            f"conversation(s), {locomo['turns']} turns. Each system ranks the turns; we walk the ranking and keep "
            "what fits the budget (cl100k tokens of each memory's text; a memory that does not fit is skipped). "
            "Recall = share of the question's evidence turns kept; overall = micro-average over questions.",
            "",
            f"![recall vs budget]({PNG_NAME})",
            "",
            "### Evidence recall (%)",
            "",
            _md_table(["questions", "system", *budgets], recall_rows(locomo, "recall")),
            "",
            "### All evidence found (% of questions)",
            "",
            _md_table(["questions", "system", *budgets], recall_rows(locomo, "all_found")),
            "",
        ]
        if locomo.get("ratios"):
            parts += [
                "### memwrap / baseline (evidence recall ratio)",
                "",
                _md_table(["questions", "ratio", *budgets], ratio_rows(locomo)),
                "",
            ]
        parts += [
            "### Cost per system on LoCoMo",
            "",
            _md_table(
                ["system", "index/retain s", "items/s", "query p50 ms", "query p95 ms", "mean list length"],
                system_cost_rows(locomo),
            ),
            "",
        ]
    if results.get("models"):
        budgets_used = (locomo or {}).get("budgets") or results["meta"]["config"].get("budgets", [])
        parts += markdown_section(results["models"], budgets_used, _md_table)
    latency = results.get("latency")
    if latency:
        parts += [
            "## Latency and throughput",
            "",
            "Synthetic chat turns; one bank grows through the sizes. Recall with "
            f"token_budget={latency['config']['max_tokens']}, "
            f"{latency['config']['warmup']} warm-up calls, {latency['config']['repetitions']} repetitions x "
            f"{latency['config']['queries_per_rep']} distinct queries; percentiles are medians across repetitions.",
            "",
            _md_table(LATENCY_HEADER, latency_rows(latency)),
            "",
        ]
        notes = latency_notes(latency)
        if notes:
            parts += [*(f"- {n}" for n in notes), ""]
        extra = extra_probe_rows(latency)
        if extra:
            parts += [
                "### Other latency probes",
                "",
                _md_table(["probe", "bank size", "p50 / p95 / p99 ms", "note"], extra),
                "",
            ]
    if results.get("long_session"):
        parts += long_report.markdown_section(results["long_session"], _md_table)
    if meta.get("warnings"):
        parts += ["## Warnings", "", *(f"- {w}" for w in meta["warnings"]), ""]
    return "\n".join(parts)


def latency_notes(latency: dict[str, Any]) -> list[str]:
    notes = []
    for size in latency.get("sizes", []):
        for name in ("recall", "recall_no_embed"):
            probe = size.get("probes", {}).get(name)
            if probe and probe.get("note") and size is latency["sizes"][0]:
                notes.append(f"{name}: {probe['note']}")
            if probe and probe.get("breakdown_ms"):
                stages = ", ".join(f"{k} {v:.1f}" for k, v in probe["breakdown_ms"].items())
                notes.append(f"{name} at {size['size']:,}: engine timings_ms medians: {stages}")
        if size.get("skipped"):
            notes.append(f"{size['size']:,}: {size['skipped']}")
    return notes


def system_cost_rows(locomo: dict[str, Any]) -> list[list[str]]:
    rows = []
    for system, cost in locomo.get("costs", {}).items():
        rows.append(
            [
                system,
                f"{cost['index_s']:.1f}",
                f"{cost['items_per_s']:,.0f}" if cost.get("items_per_s") else "-",
                _ms(cost.get("query_p50_ms")),
                _ms(cost.get("query_p95_ms")),
                f"{cost['mean_list_length']:.0f}",
            ]
        )
    return rows


def write_markdown(results: dict[str, Any], out: Path) -> Path:
    path = out / "report.md"
    path.write_text(markdown(results), encoding="utf-8")
    return path


# ------------------------------------------------------------------------------------------- terminal


def print_tables(results: dict[str, Any], console: Any | None = None) -> None:
    import sys

    from rich.console import Console
    from rich.table import Table

    console = console or Console(width=None if sys.stdout.isatty() else 160)
    locomo = results.get("locomo")
    if locomo and locomo.get("per_system"):
        budgets = [str(b) for b in locomo["budgets"]]
        for metric, title in (("recall", "LoCoMo evidence recall (%)"), ("all_found", "LoCoMo all evidence found (%)")):
            table = Table(title=title, show_lines=False)
            table.add_column("questions")
            table.add_column("system")
            for b in budgets:
                table.add_column(f"@{b}", justify="right")
            previous = None
            for row in recall_rows(locomo, metric):
                if previous is not None and row[0] != previous:
                    table.add_section()
                previous = row[0]
                style = "bold" if row[1] == MEMWRAP else None
                table.add_row(*row, style=style)
            console.print(table)
        if locomo.get("ratios"):
            table = Table(title="memwrap / baseline recall ratio")
            for col in ["questions", "ratio", *(f"@{b}" for b in budgets)]:
                table.add_column(col, justify="right" if col.startswith("@") else "left")
            for row in ratio_rows(locomo):
                table.add_row(*row)
            console.print(table)
        table = Table(title="Cost per system on LoCoMo")
        for col in ["system", "index/retain s", "items/s", "query p50 ms", "query p95 ms", "mean list length"]:
            table.add_column(col)
        for row in system_cost_rows(locomo):
            table.add_row(*row)
        console.print(table)
    if results.get("models"):
        print_section(
            results["models"], (locomo or {}).get("budgets") or results["meta"]["config"].get("budgets", []), console
        )
    latency = results.get("latency")
    if latency:
        table = Table(title="Latency & throughput")
        for col in LATENCY_HEADER:
            table.add_column(col)
        for row in latency_rows(latency):
            table.add_row(*row)
        console.print(table)
        extra = extra_probe_rows(latency)
        if extra:
            table = Table(title="Other latency probes")
            for col in ("probe", "bank size", "p50 / p95 / p99 ms", "note"):
                table.add_column(col)
            for row in extra:
                table.add_row(*row)
            console.print(table)
    if results.get("long_session"):
        long_report.print_section(results["long_session"], console)
