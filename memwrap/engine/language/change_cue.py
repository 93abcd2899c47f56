"""Whether a memory states a change, worked out once from its stored text and speaker (memory_units.change_cue).

recall/order.py's apply_changes asks, for each pair of its best hits, whether the newer replaces the older
(changes.replaces). Both of replaces' ways need the newer memory to carry a cue of change in its words (its speaker's
label left out): a personal one (changes.change_spans) or a technical one (tech_changes.technical_rules). A memory
without any replaces nothing, whatever it is weighed against; on banks of long technical messages 97-98% of
memories have none, and searching a long text for the cues is ~1 ms. So writers store this (retain, import,
observations; the update verb), a background pass fills older rows (engine/change_cues.py), and recall skips the
pairs whose newer memory is known to state no change.
"""

from __future__ import annotations

from memwrap.engine.language.changes import statement_body, states_change


def change_cue(text: str, speaker: str | None) -> bool:
    """Whether `text` (said by `speaker`) states a change that could replace an earlier statement: exactly when
    changes.replaces(newer=this, older) can hold for some older statement."""
    return states_change(statement_body(text, speaker))


__all__ = ["change_cue"]
