"""The bank of a coding agent's project: one per project directory. Standard library only: the hook's own process
(hook_client.py) names it as well as the hook's handling (claude_code.py)."""

from __future__ import annotations

import hashlib
import re
from pathlib import Path


def project_bank(project: Path) -> str:
    """One bank per project directory: its name (lower case, letters, digits, . _ -) and 8 hex digits of its path,
    so two checkouts called `api` stay apart."""
    slug = re.sub(r"[^a-z0-9._-]+", "-", project.name.lower()).strip("-._")[:60] or "project"
    digest = hashlib.sha256(str(project).encode()).hexdigest()[:8]
    return f"{slug}-{digest}"
