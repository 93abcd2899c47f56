"""The module structure, measured (issue 29): import circles, engine/'s top level, imports back up between engine
stages, `engine: Any` parameters, `# type: ignore` comments. Not a benchmark: a count from the source (ast only).

    python bench/import_structure.py [repo root]
    STAGES="language llm embed jobs retain learn recall reflect" python bench/import_structure.py

Circles are counted twice: among imports that run when a module loads (module top, module-level try/if, not under
`if TYPE_CHECKING`), and among every import (also those deferred into functions, and TYPE_CHECKING ones), since
a deferred import only hides a circle. A submodule importing its own package's __init__ is not a circle.
`importlib.import_module("…")` is not seen: that is how engine/startup.py defers the engine's import on purpose.

"Back up": a module in one of engine/'s subpackages (a stage) importing one of engine/'s top-level verb modules
(engine.py, startup, transfer, update, …: they sit above the stages), or a stage importing a stage after it in
STAGES (default: language llm embed jobs retain recall reflect learn).
"""

from __future__ import annotations

import ast
import os
import re
import sys
from pathlib import Path

ROOT = Path(sys.argv[1] if len(sys.argv) > 1 else ".").resolve()
PACKAGES = ("memwrap", "memwrap_server")


def module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            found[module_name(path)] = path
    return found


def is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def top_level_imports(
    tree: ast.Module, deferred: bool = False, annotations: bool = True
) -> list[ast.Import | ast.ImportFrom]:
    """Imports run when the module loads; with `deferred`, also those in functions and classes, and (with
    `annotations`) those under TYPE_CHECKING, which only a type checker runs."""
    found: list[ast.Import | ast.ImportFrom] = []

    def walk(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                found.append(node)
            elif deferred and isinstance(
                node,
                (
                    ast.FunctionDef,
                    ast.AsyncFunctionDef,
                    ast.ClassDef,
                    ast.With,
                    ast.AsyncWith,
                    ast.For,
                    ast.AsyncFor,
                    ast.While,
                ),
            ):
                walk(node.body)
                walk(getattr(node, "orelse", []))
            elif isinstance(node, ast.If) and (not is_type_checking(node.test) or (deferred and annotations)):
                walk(node.body)
                walk(node.orelse)
            elif isinstance(node, ast.Try):
                walk(node.body)
                for handler in node.handlers:
                    walk(handler.body)
                walk(node.orelse)
                walk(node.finalbody)

    walk(tree.body)
    return found


def resolve(name: str, known: dict[str, Path]) -> str | None:
    while name and name not in known:
        name = name.rpartition(".")[0]
    return name or None


def graph(known: dict[str, Path], deferred: bool = False, annotations: bool = True) -> dict[str, set[str]]:
    edges: dict[str, set[str]] = {name: set() for name in known}
    for name, path in known.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        for node in top_level_imports(ast.parse(path.read_text()), deferred, annotations):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    anchor = package.split(".")
                    anchor = anchor[: len(anchor) - (node.level - 1)]
                    base = ".".join(anchor + ([base] if base else []))
                # `from pkg import mod` imports the submodule
                targets = [f"{base}.{alias.name}" for alias in node.names] + [base]
            for target in targets:
                resolved = resolve(target, known)
                if resolved and resolved != name:
                    edges[name].add(resolved)
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    components: list[list[str]] = []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for target in edges[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                components.append(sorted(component))

    for node in edges:
        if node not in index:
            visit(node)
    return components


def is_package_edge(source: str, target: str, known: dict[str, Path]) -> bool:
    # a submodule importing its own package's __init__ (or the reverse) is how packages work, not a circle we count
    return known[target].name == "__init__.py" and source.startswith(target + ".")


def main() -> None:
    known = modules()
    edges = graph(known)
    pruned = {s: {t for t in ts if not is_package_edge(s, t, known)} for s, ts in edges.items()}
    found = cycles(pruned)
    print(f"import circles among module-level imports: {len(found)}")
    for component in found:
        print("   ", " <-> ".join(component))
    run = graph(known, deferred=True, annotations=False)
    run = {s: {t for t in ts if not is_package_edge(s, t, known)} for s, ts in run.items()}
    found = cycles(run)
    print(f"import circles among imports that run (module level and deferred into functions): {len(found)}")
    for component in found:
        print("   ", " <-> ".join(component))
    every = graph(known, deferred=True)
    every = {s: {t for t in ts if not is_package_edge(s, t, known)} for s, ts in every.items()}
    found = cycles(every)
    print(f"import circles counting every import (deferred into functions, TYPE_CHECKING): {len(found)}")
    for component in found:
        print("   ", " <-> ".join(component))

    engine_dir = ROOT / "memwrap" / "engine"
    top = sorted(p.name for p in engine_dir.glob("*.py") if p.name != "__init__.py")
    print(f"modules at engine/'s top level (not counting __init__): {len(top)}")
    print("   ", " ".join(top))

    # "Back up": a module inside an engine subpackage (a stage) importing engine/'s top level (the orchestrator
    # above the stages), or a module of one stage importing a stage later in the pipeline.
    order = os.environ.get("STAGES", "language llm embed jobs retain recall reflect learn").split()
    back_up = []
    for source, targets in sorted(edges.items()):
        if not source.startswith("memwrap.engine."):
            continue
        source_parts = source.split(".")
        if len(source_parts) < 4 and known[source].name != "__init__.py":
            continue  # top-level engine module: it sits above the stages
        source_stage = source_parts[2]
        for target in sorted(targets):
            if not target.startswith("memwrap.engine.") or target == "memwrap.engine":
                continue
            target_parts = target.split(".")
            target_is_top = len(target_parts) == 3 and known[target].name != "__init__.py"
            target_stage = target_parts[2]
            if target_stage == source_stage:
                continue
            if target_is_top and target_stage in (
                "engine",
                "startup",
                "transfer",
                "update",
                "import_memories",
                "view_verbs",
                "bank_views",
                "reembed",
            ):
                back_up.append((source, target))
            elif (
                source_stage in order
                and target_stage in order
                and order.index(target_stage) > order.index(source_stage)
            ):
                back_up.append((source, target))
    print(f"imports that run back up between engine stages: {len(back_up)}")
    for source, target in back_up:
        print(f"    {source} -> {target}")

    engine_any = 0
    ignores = 0
    for path in known.values():
        text = path.read_text()
        engine_any += len(re.findall(r"\bengine: Any\b", text))
        ignores += len(re.findall(r"#\s*type:\s*ignore", text))
    print(f"parameters `engine: Any`: {engine_any}")
    print(f"`# type: ignore` comments: {ignores}")


if __name__ == "__main__":
    main()
