"""Tags typed as text are split at commas in one place (memwrap.filters.split_tags), on every surface that reads
typed tags; a list is taken item by item (`recall(tags=["a,b"])` is one tag)."""

from __future__ import annotations

import re
from pathlib import Path

from memwrap.filters import split_commas, split_tags

STATIC = Path(__file__).resolve().parents[1] / "memwrap_server" / "static" / "ui" / "js"


def test_typed_tags_are_split_at_commas() -> None:
    assert split_tags("work, move,,  ") == ["work", "move"]
    assert split_tags(" , ") == []
    assert split_commas(["work,move", "home"]) == ["work", "move", "home"]
    assert split_commas([" , "]) == [" , "]  # left for validation to name
    assert split_commas(None) is None


def test_the_browser_views_split_tags_with_the_shared_helper() -> None:
    copies = [
        path.name
        for path in STATIC.rglob("*.js")
        if path.name != "memory_fields.js" and re.search(r"split\(\s*[\"'],[\"']\s*\)", path.read_text())
    ]
    assert copies == []
