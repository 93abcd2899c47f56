"""`memwrap <verb>`: one command per verb declared with `cli=True` (memwrap/verbs.py), derived from it.

Positional parameters are positional arguments (`memwrap recall BANK_ID QUERY`); the rest are options named
after the parameter (`--token-budget 512`, `--tags a,b` or `--tags a --tags b`, `--neighbours/--no-neighbours`,
`--now 2026-05-01T09:00`; mappings such as `--metadata` take JSON). Each option's help says its type, its format
and an example (memwrap/cli/options.py). A renamed parameter keeps its old option as a hidden alias
(`--max-tokens`), a list its singular (`--tag`). `--help` on any command shows the verb's own documentation. What
a command prints is the verb's result: a table where one is written (memwrap/cli/render.py), otherwise the result
as JSON; `--json` always prints JSON; `--ids` (commands that list things) prints only their ids, one a line.
The verbs that can take minutes run with a progress bar (memwrap/cli/long_runs.py).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, get_type_hints

from pydantic import TypeAdapter

from memwrap.cli.options import CLEAR, choices_of, clearable, is_bool, is_list, option_help, reader_for
from memwrap.cli.parser import CommaList, OptionHelpFormatter
from memwrap.cli.render import ID_OF, RENDERERS, print_json
from memwrap.cli.verb_call import NoSuchBank, VerbCall, one_shot_settings, run_on_memory
from memwrap.declare import Verb
from memwrap.errors import InvalidInputError
from memwrap.models import KEEP
from memwrap.verbs import VERBS


def add_verb_commands(sub: Any, common: argparse.ArgumentParser) -> None:
    for declared in VERBS.values():
        if declared.cli:
            _add_command(sub, common, declared)


def _add_command(sub: Any, common: argparse.ArgumentParser, declared: Verb) -> None:
    assert declared.cli is not None
    parser = sub.add_parser(
        declared.cli,
        parents=[common],
        help=declared.summary,
        description=declared.doc,
        formatter_class=OptionHelpFormatter,
    )
    hints = get_type_hints(declared.function, include_extras=True)
    aliases = {new: old for old, new in declared.renamed.items()}
    for name, param in declared.signature().parameters.items():
        annotation = hints.get(name, Any)
        if name in declared.positional and param.default is param.empty:
            metavar, text = option_help(name, annotation, param.default, positional=True, doc=declared.doc)
            parser.add_argument(name, metavar=name.upper(), type=reader_for(annotation, name), help=text)
            continue
        flags = [f"--{name.replace('_', '-')}"]
        extra = [f"--{aliases[name].replace('_', '-')}"] if name in aliases else []
        if is_list(annotation) and name.endswith("s"):
            extra.append(f"--{name[:-1].replace('_', '-')}")
        metavar, text = option_help(name, annotation, param.default, doc=declared.doc)
        options: dict[str, Any] = {"dest": name, "default": None, "help": text}
        if is_bool(annotation):
            parser.add_argument(*flags, action=argparse.BooleanOptionalAction, **options)
        elif is_list(annotation):
            parser.add_argument(*flags, action=CommaList, metavar=metavar, **options)
        else:
            choices = choices_of(annotation)
            reader = reader_for(annotation, name)
            if param.default is KEEP and choices is None:  # not given keeps the setting; "none" clears it
                reader = clearable(reader)
                options["help"] = f"{text + '; ' if text else ''}not given: unchanged; none clears it"
            parser.add_argument(
                *flags,
                type=reader,
                choices=choices,
                metavar=None if choices else metavar,
                **options,
            )
        for alias in extra:  # old spellings: accepted, not advertised
            if is_list(annotation):
                parser.add_argument(alias, dest=name, action=CommaList, help=argparse.SUPPRESS)
            else:
                parser.add_argument(alias, dest=name, type=reader_for(annotation, name), help=argparse.SUPPRESS)
    if declared.name in ID_OF:
        parser.add_argument("--ids", action="store_true", help="print only the ids, one a line (for scripts)")
    parser.set_defaults(run=lambda args: _run(declared, args))


def _run(declared: Verb, args: argparse.Namespace) -> int:
    arguments: dict[str, Any] = {}
    for name in declared.signature().parameters:
        value = getattr(args, name, None)
        if value is None:
            continue
        if name == "content" and value == "-":
            value = sys.stdin.read()
        if value is CLEAR:
            value = None
        arguments[name] = value
    check_paths(declared.name, arguments)
    bank = arguments.get("bank_id") if isinstance(arguments.get("bank_id"), str) else None
    positional = [arguments.pop(name) for name in declared.positional if name in arguments]
    call = VerbCall(declared.name, args, one_shot_settings(args, bank), positional, arguments)
    from memwrap.cli.long_runs import LONG_RUNS  # progress bars (rich.progress): loaded by the commands that run

    long_run = LONG_RUNS.get(declared.name)
    try:
        result = long_run(call) if long_run is not None else run_on_memory(call, call.on)
    except NoSuchBank:
        return 1
    if getattr(args, "ids", False):
        sys.stdout.writelines(f"{found}\n" for found in ID_OF[declared.name](result))
    elif args.json or declared.name not in RENDERERS:
        print_json(TypeAdapter(Any).dump_python(result, mode="json"))
    else:
        RENDERERS[declared.name](result, args)
    return 0


def check_paths(verb: str, arguments: dict[str, Any]) -> None:
    """The files a command reads or writes, checked before the engine starts: one line naming the path."""
    if verb in ("import_memories", "import_bank"):
        name = "memories" if verb == "import_memories" else "path"
        source = Path(str(arguments.get(name, "")))
        if not source.exists():
            raise InvalidInputError(f"{source}: no such file. Give the path of the JSONL file to import.")
        if not source.is_file():
            raise InvalidInputError(f"{source}: not a file. Give the path of the JSONL file to import.")
    if verb == "export_bank":
        target = Path(str(arguments.get("path", "")))
        if target.is_dir():
            raise InvalidInputError(f"{target} is a directory: give a file name, e.g. {target / 'bank.jsonl'}.")
        if not target.parent.is_dir():
            raise InvalidInputError(
                f"{target.parent}: no such directory. Create it first (mkdir -p {target.parent}) or write elsewhere."
            )
