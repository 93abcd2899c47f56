"""`memwrap reembed`: re-embed the memories with the configured model, asking first when that means all of them,
under a progress bar fed by the re-embedding's own `progress=` callback."""

from __future__ import annotations

import argparse
import asyncio
import sys
from typing import Any

from rich.console import Console

from memwrap.cli.progress import progress
from memwrap.cli.render import print_json
from memwrap.cli.verb_call import one_shot_settings
from memwrap.config import Settings


def cmd_reembed(args: argparse.Namespace) -> int:
    outcome = asyncio.run(_reembed(args, Console(stderr=True, highlight=False)))
    if args.json:
        print_json(outcome)
    elif outcome["reembedded"] == 0 and outcome["stored_model"] != outcome["model"]:
        sys.stdout.write(f"The store now holds {outcome['model']} vectors (it had no memories to re-embed).\n")
    elif outcome["reembedded"] == 0:
        sys.stdout.write(
            f"Nothing to re-embed: the {outcome['memories']} memories are embedded with {outcome['model']} "
            "(--force re-embeds them anyway).\n"
        )
    elif outcome["reembedded"] is not None:
        sys.stdout.write(f"Re-embedded {outcome['reembedded']} memories with {outcome['model']}.\n")
    return 0 if outcome["reembedded"] is not None else 1


def reembed_settings(args: argparse.Namespace) -> Settings:
    """A one-shot command's settings with no bank of its own: no worker (other banks' queued jobs stay queued)."""
    return one_shot_settings(args, None)


async def _reembed(args: argparse.Namespace, console: Console) -> dict[str, Any]:
    """What was done: {"reembedded": n (None: refused), "model", "stored_model", "memories"}."""
    from memwrap.engine.embed.reembed import reembed_plan, reembed_store
    from memwrap.engine.startup import open_engine

    settings = reembed_settings(args)
    engine = await open_engine(settings, allow_model_change=True)
    try:
        model = settings.embedding_space
        plan = await reembed_plan(engine.store, engine.embedder, model)
        outcome: dict[str, Any] = {
            "reembedded": 0,
            "model": model,
            "stored_model": plan.stored_model,
            "memories": plan.memories,
        }
        todo = plan.to_embed(force=args.force)
        if todo == 0 and not plan.model_changed:
            return outcome
        full = args.force or plan.model_changed
        # An empty store on a new model has nothing to ask about: the run below only records the model.
        if full and todo and not args.yes:
            why = (
                f"--force: they are already {model}"
                if not plan.model_changed
                else f"the store's vectors are {plan.stored_model} ({plan.stored_dim} dims), "
                f"{model} ({plan.dim} dims) is configured"
            )
            question = (
                f"Re-embed all {todo} memories ({why})? The vector index is rebuilt at the end; until then "
                "semantic recall is slower."
            )
            if not sys.stdin.isatty():
                console.print(f"[red]error[/]: {question} Run `memwrap reembed --yes` to confirm.")
                return outcome | {"reembedded": None}
            answer = await asyncio.to_thread(console.input, f"{question} [y/N] ")
            if answer.strip().lower() not in ("y", "yes"):
                console.print("Nothing changed.")
                return outcome | {"reembedded": None}
        with progress(args, "reembed", todo, "memories") as bar:
            outcome["reembedded"] = await reembed_store(
                engine.store, engine.embedder, model, only_missing=not full, progress=bar.advance
            )
        return outcome
    finally:
        await engine.close()


def configure_reembed(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--yes", "-y", action="store_true", help="re-embed everything without asking first")
    parser.add_argument(
        "--force", action="store_true", help="re-embed every memory even when the model has not changed"
    )


# --- import-bank ----------------------------------------------------------------------------------------------
