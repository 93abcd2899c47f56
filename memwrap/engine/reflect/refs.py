"""Short references for what the model is shown (M1 mental model, O2 observation, F3 fact), and the gathered record.

Models copy "F3" reliably and cheaply; a 36-character UUID costs ~20 tokens each time and is often garbled. The
references live for one reflect; the result maps them back to real ids (`ReflectResult.citations`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from uuid import UUID

PREFIX = {"mental_model": "M", "observation": "O", "fact": "F"}
REF = re.compile(r"\b([MOF])(\d{1,4})\b")
UUID_RE = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def kind_of_type(memory_type: str) -> str:
    """Reference kind of a memory unit's type."""
    return "observation" if memory_type == "observation" else "fact"


@dataclass
class Refs:
    by_ref: dict[str, tuple[str, UUID]] = field(default_factory=dict)
    by_id: dict[UUID, str] = field(default_factory=dict)
    _next: dict[str, int] = field(default_factory=dict)

    def ref(self, kind: str, item_id: UUID) -> str:
        """The reference of an item, the same one every time it comes up."""
        found = self.by_id.get(item_id)
        if found is not None:
            return found
        prefix = PREFIX[kind]
        number = self._next.get(prefix, 0) + 1
        self._next[prefix] = number
        ref = f"{prefix}{number}"
        self.by_ref[ref] = (kind, item_id)
        self.by_id[item_id] = ref
        return ref

    def resolve(self, text: str) -> tuple[str, UUID] | None:
        """A reference ("F3", "[F3]", "f3") back to (kind, id); None if it names nothing shown."""
        key = text.strip().strip("[]()").strip().upper()
        return self.by_ref.get(key)


def parse_uuid(text: str) -> UUID | None:
    match = UUID_RE.search(text)
    return UUID(match.group(0)) if match else None


@dataclass
class Gathered:
    """Every item shown to the model, once each, in the order first shown: what a forced synthesis answers from."""

    lines: dict[str, str] = field(default_factory=dict)  # ref -> the line as shown

    def add(self, ref: str, line: str) -> None:
        self.lines.setdefault(ref, line.rstrip("\n"))

    def seen(self, ref: str) -> bool:
        return ref in self.lines

    def render(self) -> str:
        return "\n".join(self.lines.values())
