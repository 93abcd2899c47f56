"""The core's commands that are not verbs: demo, reembed (memwrap/cli/reembed.py), import-mem0 and spool."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rich.console import Console
from rich.panel import Panel

from memwrap.api import Memory
from memwrap.cli import reembed
from memwrap.cli.registry import Register
from memwrap.cli.render import print_json, table
from memwrap.cli.verb_call import one_shot_settings
from memwrap.demo import DEMO_BANK, DEMO_BUDGET, DEMO_NOW, DEMO_SESSIONS, demo_items, run_demo
from memwrap.errors import InvalidInputError

console = Console()
errors = Console(stderr=True, highlight=False)


def register(add: Register) -> None:
    add("demo", configure_demo, cmd_demo, "retain a scripted year of chats and show what gets injected")
    add(
        "reembed",
        reembed.configure_reembed,
        reembed.cmd_reembed,
        "re-embed the memories with the configured MEMWRAP_EMBEDDING_MODEL (those not embedded with it already)",
    )
    add("import-mem0", configure_import_mem0, cmd_import_mem0, "import a mem0 export (get_all JSON) into a bank")
    add("spool", configure_spool, cmd_spool, "retains waiting in the spool: counts, list, replay, purge dead")


def _memory(args: argparse.Namespace, bank: str | None = None) -> Memory:
    return Memory(settings=one_shot_settings(args, bank or getattr(args, "bank_id", None)))


# --- demo -----------------------------------------------------------------------------------------------------


def configure_demo(demo: argparse.ArgumentParser) -> None:
    demo.add_argument(
        "--token-budget", type=int, default=DEMO_BUDGET, metavar="N", help=f"tokens per block (default {DEMO_BUDGET})"
    )
    demo.add_argument("--max-tokens", dest="token_budget", type=int, help=argparse.SUPPRESS)


def cmd_demo(args: argparse.Namespace) -> int:
    with _memory(args, DEMO_BANK) as mem:
        stored, recalls = run_demo(mem, token_budget=args.token_budget)
        if args.json:
            print_json(
                [r.model_dump(mode="json", include={"query", "context", "tokens", "token_budget"}) for r in recalls]
            )
            return 0
        console.print(
            f"[bold]Retained[/] {len(demo_items())} exchanges of {len(DEMO_SESSIONS)} sessions (a year) into "
            f"bank [cyan]{DEMO_BANK}[/]: {stored} memories, embedded home: {mem.settings.home}.\n"
            f"Each question gets what fits in {args.token_budget} tokens, asked on {DEMO_NOW:%Y-%m-%d}.\n"
        )
        for recall in recalls:
            console.print(
                Panel(
                    recall.context.rstrip() or "(nothing recalled)",
                    title=f"[bold]{recall.query}[/]  →  injected ({recall.tokens}/{recall.token_budget} tokens)",
                    expand=False,
                )
            )
    return 0


# --- import-mem0 ----------------------------------------------------------------------------------------------


def configure_import_mem0(mem0: argparse.ArgumentParser) -> None:
    mem0.add_argument("bank_id", metavar="BANK_ID", help="the bank to import into (one mem0 user: one bank)")
    mem0.add_argument(
        "file", metavar="FILE", help='the JSON file: {"results": [...]} as mem0\'s get_all returns it, or a list'
    )


def cmd_import_mem0(args: argparse.Namespace) -> int:
    from memwrap.cli.long_runs import import_rows
    from memwrap.engine.transfer.mem0_export import read_mem0_file  # only this command reads mem0's format
    from memwrap.validate import bank_id

    bank_id(args.bank_id)
    source = Path(args.file)
    if not source.is_file():
        what = "not a file" if source.exists() else "no such file"
        raise InvalidInputError(f"{source}: {what}. Give the JSON file mem0's get_all returned.")
    memories = read_mem0_file(source)  # checked whole before the database is touched
    with _memory(args) as mem:
        count = import_rows(args, mem, args.bank_id, memories, f"import {source.name}")
    if args.json:
        print_json({"bank_id": args.bank_id, "read": len(memories), "imported": count})
    else:
        console.print(
            f"Imported {count} of {len(memories)} mem0 memories into {args.bank_id} "
            f"({len(memories) - count} already there)."
        )
    return 0


# --- spool ----------------------------------------------------------------------------------------------------


def configure_spool(spool: argparse.ArgumentParser) -> None:
    spool.add_argument("action", nargs="?", choices=["counts", "list", "replay", "purge"], default="counts")
    spool.add_argument("--dead", action="store_true", help="the dead rows (failed alone too often) instead")
    spool.add_argument("--bank", metavar="BANK_ID", help="list: only this bank")
    spool.add_argument("--limit", type=int, default=50, metavar="N", help="list: at most this many rows (default 50)")
    spool.add_argument(
        "--id", type=int, action="append", metavar="N", help="replay/purge --dead: only these rows (repeat it)"
    )
    spool.add_argument(
        "--timeout", type=float, default=60.0, metavar="SECONDS", help="replay: seconds to deliver for (default 60)"
    )
    spool.add_argument("--ids", action="store_true", help="list: print only the row ids, one a line")


def cmd_spool(args: argparse.Namespace) -> int:
    from memwrap.config import load_settings
    from memwrap.wrappers import spool_admin

    path = spool_admin.spool_path(load_settings(home=args.home))
    if args.action == "list":
        found = spool_admin.rows(path, dead=args.dead, bank_id=args.bank, limit=args.limit)
        if args.json:
            print_json([r.model_dump(mode="json") for r in found])
            return 0
        if args.ids:
            sys.stdout.writelines(f"{r.id}\n" for r in found)
            return 0
        shown = table(
            f"{'Dead' if args.dead else 'Waiting'} retains in {path}",
            ("id", "bank", "spooled", "document", "error" if args.dead else "attempts", "text"),
            ids=("bank",),
        )
        for r in found:
            shown.add_row(
                str(r.id),
                r.bank_id,
                f"{r.created:%Y-%m-%d %H:%M:%S}",
                r.document_id or "",
                (r.error or "") if args.dead else str(r.attempts),
                r.text,
            )
        console.print(shown)
        return 0
    if args.action == "purge":
        if not args.dead:
            errors.print("[red]error[/]: `memwrap spool purge` only removes dead rows: add --dead.")
            return 2
        removed = spool_admin.purge_dead(path, args.id or None)
        _report(args, {"purged": removed}, f"Removed {removed} dead row(s) from {path}.")
        return 0
    if args.action == "replay":
        revived = spool_admin.revive_dead(path, args.id or None) if args.dead else 0
        with _memory(args) as mem:
            result = spool_admin.replay(mem, path, timeout=args.timeout)
        summary = (
            f"Delivered {result.delivered} retain(s)"
            + (f" ({revived} back from dead)" if revived else "")
            + f"; {result.still_waiting} still waiting ({result.held_by_running} held by running processes)"
            + (f", {result.buried} moved to dead" if result.buried else "")
            + (f", {result.rejected} refused" if result.rejected else "")
            + "."
        )
        if not result.complete and result.last_error:
            summary += f" Last error: {result.last_error}"
        _report(args, {"revived": revived, **result.model_dump(mode="json")}, summary)
        return 0 if result.complete else 1
    found_counts = spool_admin.counts(path)
    if args.json:
        print_json(found_counts.model_dump(mode="json"))
        return 0
    console.print(
        f"[bold]{path}[/]: {found_counts.waiting} waiting ({found_counts.held_by_running} held by running "
        f"processes), {found_counts.dead} dead."
    )
    for title, banks in (("waiting", found_counts.waiting_by_bank), ("dead", found_counts.dead_by_bank)):
        if banks:
            console.print(f"  {title}: " + ", ".join(f"{bank} {n}" for bank, n in sorted(banks.items())))
    if found_counts.dead:
        console.print("  `memwrap spool list --dead` shows them; `replay --dead` retries, `purge --dead` deletes.")
    return 0


def _report(args: argparse.Namespace, data: dict[str, object], text: str) -> None:
    if args.json:
        print_json(data)
    else:
        console.print(text)
