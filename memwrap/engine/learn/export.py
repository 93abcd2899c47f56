"""`memwrap export DIR`: mental models (and a digest of observations) as Markdown files, one folder per bank.

    DIR/<bank>/mental-models/<name>.md     front matter (question, version, status, sources, …) + the content
    DIR/<bank>/observations.md              every current observation, with proof count, trend and dates

File names are slugs of the names (a name cannot climb out of DIR); a slug already used gets a suffix.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from memwrap.engine.learn import mental_models, observation_views
from memwrap.models import MentalModel, Observation

if TYPE_CHECKING:
    from memwrap.engine.parts import EngineParts

_UNSAFE = re.compile(r"[^\w.-]+", re.UNICODE)
OBSERVATION_LIMIT = 10_000


def slug(name: str) -> str:
    cleaned = _UNSAFE.sub("-", name.strip()).strip(".-")
    return cleaned[:120] or "unnamed"


def render_mental_model(model: MentalModel) -> str:
    front = {
        "name": model.name,
        "bank": model.bank_id,
        "question": model.question,
        "tags": model.tags,
        "version": model.version,
        "status": model.status,
        "generator": model.generator,
        "refreshed_at": model.refreshed_at.isoformat() if model.refreshed_at else None,
        "sources": [str(s) for s in model.source_ids],
    }
    # JSON values are valid YAML scalars and lists: any YAML front-matter reader takes them.
    lines = ["---", *(f"{key}: {json.dumps(value, ensure_ascii=False)}" for key, value in front.items()), "---", ""]
    lines += [f"# {model.name}", "", f"> {model.question}", "", model.content.rstrip() or "_(not generated yet)_", ""]
    return "\n".join(lines)


def render_observations(bank_id: str, observations: list[Observation], now: datetime) -> str:
    lines = [f"# Observations in {bank_id}", "", f"_Exported {now:%Y-%m-%d %H:%M} UTC._", ""]
    for o in observations:
        span = ""
        if o.first_evidence_at and o.last_evidence_at:
            span = f", {o.first_evidence_at:%Y-%m-%d}..{o.last_evidence_at:%Y-%m-%d}"
        tags = f" [{', '.join(o.tags)}]" if o.tags else ""
        lines.append(f"- {' '.join(o.text.split())}{tags} — {o.proof_count} source(s), {o.trend}{span} (`{o.id}`)")
    return "\n".join(lines) + "\n"


async def export_markdown(parts: EngineParts, directory: Path, *, bank_id: str | None = None) -> list[Path]:
    """Write the files; returns their paths."""
    pool = parts.pool
    banks = (
        [bank_id]
        if bank_id
        else [
            r["bank_id"]
            for r in await pool.fetch(
                "SELECT DISTINCT bank_id FROM mental_models UNION SELECT DISTINCT bank_id FROM observations ORDER BY 1"
            )
        ]
    )
    now = datetime.now(UTC)
    written: list[Path] = []
    for bank in banks:
        folder = Path(directory) / slug(bank)
        models = await mental_models.list_models(pool, bank)
        if models:
            (folder / "mental-models").mkdir(parents=True, exist_ok=True)
        used: set[str] = set()
        for model in models:
            name = slug(model.name)
            while name in used:
                name += "-"
            used.add(name)
            path = folder / "mental-models" / f"{name}.md"
            path.write_text(render_mental_model(model), encoding="utf-8")
            written.append(path)
        observations = await observation_views.list_observations(
            pool, observation_views.ObservationSelection(bank, now=now, limit=OBSERVATION_LIMIT)
        )
        if observations:
            folder.mkdir(parents=True, exist_ok=True)
            path = folder / "observations.md"
            path.write_text(render_observations(bank, observations, now), encoding="utf-8")
            written.append(path)
    return written
