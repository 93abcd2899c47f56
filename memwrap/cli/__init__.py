"""The `memwrap` command line, one package above the core (the console script: memwrap/launcher.py).

    app.py            build_parser, main; the core's command groups (CORE_GROUPS)
    registry.py       how a group adds commands; the `memwrap.commands` entry point of installed packages
    parser.py         the parser: grouped --help, "did you mean", one-line errors
    verb_commands.py  one command per declared verb; options.py reads their options, render.py prints results
    verb_call.py      a verb command's call: on a Memory, or on an engine opened for a progress bar
    long_runs.py      import-memories, import-bank, export-bank, consolidate with a progress bar (progress.py)
    core_commands.py  demo, reembed (reembed.py), import-mem0, spool
    learning.py       worker, jobs, export
    hook.py           hook (the console script runs it without this package)

`import memwrap.cli` imports no server module: memwrap_server's commands (serve, ui, mcp) are found through the
entry point when the parser is built.
"""

from memwrap.cli.app import build_parser, main

__all__ = ["build_parser", "main"]
