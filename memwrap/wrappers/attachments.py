"""Images, files and audio in a message, as a visible placeholder that says what is known about them.

A message of text and an image retains the text and `[image: diagram.png (image/png) from cdn.example.com]`:
memory then knows that something was shown, even though it cannot see it. What a placeholder may hold: the
kind (image, file, audio), a name (filename, title, the last part of a URL's path, a provider's file id), the
media type (given, from a data: URI's header, or guessed from the name), the host of a URL, a detail or a
description the caller gave. Never the bytes of a data: URI or of base64 data, never a URL's query string (a
signed URL's signature is a credential) and never the rest of its path.

The parts read (dicts, as JSON has them, or the SDKs' objects):

    OpenAI chat          image_url {url, detail}, input_audio {data, format}, file {file_data, file_id, filename}
    OpenAI Responses     input_image {image_url, file_id, detail}, input_file {file_data, file_id, file_url,
                         filename}, input_audio
    Anthropic            image / document {source: base64 | url | file | text | content, title, context}
"""

from __future__ import annotations

import mimetypes
import re
from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote, urlsplit

# The longest name or description a placeholder shows: a label, not the content.
MAX_LABEL = 120

IMAGE_PARTS = frozenset({"image_url", "input_image", "image"})
AUDIO_PARTS = frozenset({"input_audio", "audio"})
FILE_PARTS = frozenset({"file", "input_file", "document"})
ATTACHMENT_PARTS = IMAGE_PARTS | AUDIO_PARTS | FILE_PARTS

_DATA_URI = re.compile(r"^data:([\w.+-]+/[\w.+-]+)?[;,]", re.IGNORECASE)
_BRACKETS = str.maketrans({"[": "(", "]": ")"})


def _get(obj: Any, key: str) -> Any:
    if isinstance(obj, Mapping):
        return obj.get(key)
    return getattr(obj, key, None)


def _label(value: Any) -> str | None:
    """A name or description fit for one line inside brackets, or None."""
    if not isinstance(value, str):
        return None
    text = " ".join(value.split()).translate(_BRACKETS)
    if not text:
        return None
    return text if len(text) <= MAX_LABEL else text[: MAX_LABEL - 1] + "…"


class _Known:
    """What is known of one attachment, filled from whichever fields its part has."""

    def __init__(self, kind: str) -> None:
        self.kind = kind
        self.name: str | None = None
        self.media_type: str | None = None
        self.host: str | None = None
        self.file_name: str | None = None  # the last part of a URL's path: its extension types it
        self.notes: list[str] = []

    def named(self, value: Any) -> None:
        if self.name is None:
            self.name = _label(value)

    def typed(self, value: Any) -> None:
        if self.media_type is None and isinstance(value, str) and value.strip():
            self.media_type = _label(value.strip().lower())

    def note(self, value: Any) -> None:
        text = _label(value)
        if text and text not in self.notes:
            self.notes.append(text)

    def located(self, url: Any) -> None:
        """A URL: a data: URI gives its media type only; any other its host and the last part of its path."""
        if not isinstance(url, str) or not url:
            return
        data = _DATA_URI.match(url)
        if data:
            self.typed(data.group(1))
            return
        if url.lower().startswith("data:"):
            return
        try:
            parts = urlsplit(url)
            host = parts.hostname
        except ValueError:
            return
        if not parts.scheme or not host:  # raw base64, or something else that is no URL: nothing to show
            return
        self.host = host
        last = unquote(parts.path.rsplit("/", 1)[-1])
        if "." in last.strip("."):
            self.file_name = _label(last)
            self.named(last)

    def render(self) -> str:
        for name in (self.name, self.file_name):
            if self.media_type is None and name:
                self.typed(mimetypes.guess_type(name)[0])
        text = self.kind + (f": {self.name}" if self.name else "")
        if self.media_type:
            text += f" ({self.media_type})"
        if self.host:
            text += f" from {self.host}"
        if self.notes:
            text += " — " + "; ".join(self.notes)
        return f"[{text}]"


def _source(known: _Known, source: Any) -> None:
    """An Anthropic block's `source`: base64, url, file, text or content."""
    if source is None:
        return
    known.typed(_get(source, "media_type"))
    kind = _get(source, "type")
    if kind == "url":
        known.located(_get(source, "url"))
    elif kind == "file":
        known.named(_get(source, "file_id"))
    elif kind == "text" and known.media_type is None:
        known.typed("text/plain")


def attachment_text(part: Any) -> str | None:
    """The placeholder of an image, audio or file content part of any provider, or None for other parts."""
    kind = _get(part, "type")
    if kind not in ATTACHMENT_PARTS:
        return None
    if kind in IMAGE_PARTS:
        known = _Known("image")
    elif kind in AUDIO_PARTS:
        known = _Known("audio")
    else:
        known = _Known("file")
    if kind == "image_url":  # chat: {"image_url": {"url", "detail"}}
        inner = _get(part, "image_url")
        known.located(inner if isinstance(inner, str) else _get(inner, "url"))
        detail = None if isinstance(inner, str) else _get(inner, "detail")
        if detail and detail != "auto":
            known.note(f"detail {detail}")
    elif kind == "input_image":  # responses: {"image_url": str, "file_id", "detail"}
        known.located(_get(part, "image_url"))
        known.named(_get(part, "file_id"))
        detail = _get(part, "detail")
        if detail and detail != "auto":
            known.note(f"detail {detail}")
    elif kind in AUDIO_PARTS:  # {"input_audio": {"data", "format"}} (chat) or the fields on the part
        inner = _get(part, "input_audio") or part
        audio_format = _get(inner, "format")
        if isinstance(audio_format, str) and audio_format:
            known.typed(f"audio/{audio_format}")
    elif kind == "file":  # chat: {"file": {"file_data", "file_id", "filename"}}
        inner = _get(part, "file") or {}
        known.named(_get(inner, "filename"))
        known.located(_get(inner, "file_data"))
        known.named(_get(inner, "file_id"))
    elif kind == "input_file":  # responses: {"file_data", "file_id", "file_url", "filename"}
        known.named(_get(part, "filename"))
        known.located(_get(part, "file_data"))
        known.located(_get(part, "file_url"))
        known.named(_get(part, "file_id"))
    if kind in ("image", "document"):  # anthropic: {"source": {...}, "title", "context"}
        known.named(_get(part, "title"))
        _source(known, _get(part, "source"))
        known.note(_get(part, "context"))
    return known.render()


# A placeholder that names nothing (`[image]`, `[audio (audio/wav)]`): worth keeping in the memory (something was
# shown), but no words for a recall query to look for. One with a name (`[file: q3-report.pdf]`) stays in a query.
UNNAMED_PLACEHOLDER = re.compile(r"\[(?:image|audio|file)(?: \([^()\[\]]*\))?(?: from [^\s\[\]]+)?(?: — [^\[\]]*)?\]")


def without_unnamed_placeholders(text: str) -> str:
    return UNNAMED_PLACEHOLDER.sub("", text)


__all__ = ["ATTACHMENT_PARTS", "UNNAMED_PLACEHOLDER", "attachment_text", "without_unnamed_placeholders"]
