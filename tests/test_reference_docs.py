"""The lists the code knows, in the docs: generated from the code (memwrap_server/_generate_reference.py) and
checked here.

docs/configuration.md is generated whole; the MCP tools and the verbs `Memory(url=...)` cannot run are marked
spans in README.md and docs/*.md. These tests fail when a page is out of date (run
`python -m memwrap_server._generate_reference`), when a settings field has no meaning or no section, when the code
reads a MEMWRAP_ variable the reference does not know, when a page names one that does not exist, and when a
comment or page cites a test file that does not exist."""

from __future__ import annotations

import re
from pathlib import Path

from memwrap_server import _generate_reference as reference

ROOT = reference.ROOT
NAME = re.compile(r"MEMWRAP_[A-Z0-9_]+(?:\*)?")
# Where the code reads (or names) variables, and the kinds of files it is written in.
CODE_DIRS = ("memwrap", "memwrap_server", "examples", "bench", "tests")
CODE_SUFFIXES = {".py", ".mjs", ".yaml", ".sh", ".toml"}
# Spelled like a variable but not one: the fence's tag in a forged block (tests/test_fence.py).
NOT_VARIABLES = {"MEMWRAP_MEMORIES"}
TEST_FILE = re.compile(r"tests/test_[a-z0-9_]+\.py")


def _code_files() -> list[Path]:
    files = [p for d in CODE_DIRS for p in (ROOT / d).rglob("*") if p.suffix in CODE_SUFFIXES and p.is_file()]
    return [*files, ROOT / ".ci" / "run", ROOT / "pyproject.toml"]


def _names(text: str) -> set[str]:
    return set(NAME.findall(text))


def _known(name: str, known: set[str]) -> bool:
    """A variable, or a family written as a prefix (`MEMWRAP_EXTRACTION_*`, `MEMWRAP_LLM_`) that some variable has."""
    if name.endswith(("_", "*")):
        prefix = name.rstrip("*")
        return prefix == "MEMWRAP_" or any(k.startswith(prefix) for k in known)
    return name in known


def test_the_generated_pages_are_current() -> None:
    assert reference.stale() == [], f"run: {reference.GENERATOR}"


def test_every_settings_field_says_what_it_means_and_where_the_page_lists_it() -> None:
    """Its meaning is `Field(description=...)`, its section `json_schema_extra=section(...)` (memwrap/settings/)."""
    for name, info in reference.fields().items():
        assert info.description, f"{name}: no description="
        extra = info.json_schema_extra
        assert isinstance(extra, dict) and extra.get("section"), f"{name}: no json_schema_extra=section(...)"


def test_every_variable_the_code_names_is_in_the_reference() -> None:
    known = reference.variable_names()
    unknown = {
        f"{name} ({path.relative_to(ROOT)})"
        for path in _code_files()
        for name in _names(path.read_text(encoding="utf-8", errors="replace"))
        if name not in NOT_VARIABLES and not _known(name, known)
    }
    assert unknown == set()


def test_every_variable_read_outside_the_settings_is_read_somewhere() -> None:
    named = set().union(
        *(
            _names(p.read_text(encoding="utf-8", errors="replace"))
            for p in _code_files()
            if p != Path(reference.__file__)
        )
    )
    listed = {v.name for rows in reference.ENVIRONMENT.values() for v in rows}
    assert listed - named == set()


def test_the_pages_name_only_variables_that_exist() -> None:
    known = reference.variable_names()
    unknown = {
        f"{name} ({page.relative_to(ROOT)})"
        for page in reference.pages()
        for name in _names(page.read_text(encoding="utf-8"))
        if not _known(name, known)
    }
    assert unknown == set()


def test_the_configuration_page_lists_every_variable() -> None:
    page = (ROOT / "docs" / "configuration.md").read_text(encoding="utf-8")
    rows = set(re.findall(r"^\| `(MEMWRAP_[A-Z0-9_]+)` \|", page, re.M))
    assert rows == {v.name for group in reference.variables().values() for v in group}
    assert len(rows) > 90


def test_each_list_is_shown_somewhere_and_the_readme_shows_them_all() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for name in reference.LISTS:
        assert f"<!-- list:{name} -->" in readme


def test_a_list_that_lost_an_item_is_out_of_date() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    shortened = readme.replace(", `update_memory`", "", 1)
    assert shortened != readme and reference.fill_lists(shortened) == readme
    assert "update_memory" in reference.LISTS["mcp-tools"]()
    assert "import_memories" in reference.LISTS["local-only"]()


def test_the_server_describes_every_mcp_tool() -> None:
    from memwrap_server.app import DESCRIPTION
    from memwrap_server.mcp import tool_names

    assert all(f" {name}" in DESCRIPTION for name in tool_names())


def test_cited_test_files_exist() -> None:
    sources = [*_code_files(), *reference.pages()]
    cited = {
        (m, str(p.relative_to(ROOT)))
        for p in sources
        for m in TEST_FILE.findall(p.read_text(encoding="utf-8", errors="replace"))
    }
    assert {(m, where) for m, where in cited if not (ROOT / m).exists()} == set()


_CITED_PATH = re.compile(r"`((?:memwrap|memwrap_server|bench|tests|examples|docs)/[\w/.-]*[\w/])`")


def test_every_file_the_readme_and_docs_cite_exists() -> None:
    """A module that moves takes its citations with it: README and docs/ name only paths that exist."""
    pages = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    missing = [
        (page.name, cited)
        for page in pages
        for cited in _CITED_PATH.findall(page.read_text(encoding="utf-8"))
        if "*" not in cited and "{" not in cited and not (ROOT / cited).exists()
    ]
    assert missing == []
