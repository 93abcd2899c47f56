"""Images, audio and files in a message are retained as placeholders, never dropped: through the real OpenAI
(chat and Responses) and Anthropic SDKs against the fake server, into the real engine.

What is retained says the kind, the name, the media type and a URL's host; never a data: URI's or base64 bytes,
never a URL's query string (a signed URL's signature) or the rest of its path.
"""

from __future__ import annotations

import base64
from typing import Any

import pytest
from conftest_wrappers import *  # noqa: F403 - fixtures
from conftest_wrappers import FakeLLMServer, Reply, anthropic_sdk, openai_sdk

import memwrap
from memwrap import Memory
from memwrap.wrappers.attachments import attachment_text
from memwrap.wrappers.transcript import anthropic_turns, chat_turns, responses_turns

# What the wrappers do with memory, not what the engine stores or ranks: the in-memory engine (memwrap.testing).
warm_memory = memory_double()

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"pixels" * 40).decode()
PDF = base64.b64encode(b"%PDF-1.7 the quarterly numbers" * 10).decode()
WAV = base64.b64encode(b"RIFF....WAVEfmt " * 20).decode()
SIGNED = "https://cdn.example.com/uploads/u/42/diagram.png?X-Amz-Signature=deadbeefcafe&X-Amz-Expires=300"
SECRETS = (PNG[:40], PDF[:40], WAV[:40], "X-Amz-Signature", "deadbeefcafe", "/uploads/u/42")


def _retained(memory: Memory, bank: str) -> str:
    return "\n".join(m.text for m in memory.list(bank))


def _assert_no_bytes(text: str) -> None:
    for secret in SECRETS:
        assert secret not in text, f"{secret!r} was retained"


# -- OpenAI chat: image_url (URL and data: URI), input_audio, file ------------------------------------------------


def test_openai_chat_parts_are_retained_as_placeholders(
    warm_memory: Memory, llm_server: FakeLLMServer, bank: str
) -> None:
    llm_server.script([Reply(text="It is a sequence diagram.")])
    client = memwrap.wrap_openai(openai_sdk(llm_server), bank_id=bank, memory=warm_memory, recall_timeout=10)
    content: list[dict[str, Any]] = [
        {"type": "text", "text": "What do these show?"},
        {"type": "image_url", "image_url": {"url": SIGNED, "detail": "high"}},
        {"type": "image_url", "image_url": {"url": f"data:image/jpeg;base64,{PNG}"}},
        {"type": "input_audio", "input_audio": {"data": WAV, "format": "wav"}},
        {"type": "file", "file": {"filename": "q3-report.pdf", "file_data": f"data:application/pdf;base64,{PDF}"}},
        {"type": "file", "file": {"file_id": "file-abc123"}},
    ]
    client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": content}])
    assert client.memwrap.flush(30)

    # The model was sent the attachments as the app gave them (memwrap reads them, never rewrites them).
    sent = llm_server.requests[-1].body["messages"][-1]["content"]
    assert [p["type"] for p in sent] == ["text", "image_url", "image_url", "input_audio", "file", "file"]
    retained = _retained(warm_memory, bank)
    assert "What do these show?" in retained
    assert "[image: diagram.png (image/png) from cdn.example.com — detail high]" in retained
    assert "[image (image/jpeg)]" in retained
    assert "[audio (audio/wav)]" in retained
    assert "[file: q3-report.pdf (application/pdf)]" in retained
    assert "[file: file-abc123]" in retained
    assert "It is a sequence diagram." in retained
    _assert_no_bytes(retained)


def test_an_image_alone_still_makes_a_user_turn(warm_memory: Memory, llm_server: FakeLLMServer, bank: str) -> None:
    """A message holding nothing but an image used to retain nothing of the user's side."""
    llm_server.script([Reply(text="A cat on a sofa.")])
    client = memwrap.wrap_openai(openai_sdk(llm_server), bank_id=bank, memory=warm_memory, recall_timeout=10)
    image = {"type": "image_url", "image_url": {"url": "https://img.example.org/pets/cat.webp"}}
    client.chat.completions.create(model="gpt-4o-mini", messages=[{"role": "user", "content": [image]}])
    assert client.memwrap.flush(30)
    retained = _retained(warm_memory, bank)
    assert "user: [image: cat.webp (image/webp) from img.example.org]" in retained
    assert "A cat on a sofa." in retained


# -- OpenAI Responses: input_image, input_file --------------------------------------------------------------------


def test_openai_responses_parts_are_retained_as_placeholders(
    warm_memory: Memory, llm_server: FakeLLMServer, bank: str
) -> None:
    llm_server.script([Reply(text="Revenue grew 12%.")])
    client = memwrap.wrap_openai(openai_sdk(llm_server), bank_id=bank, memory=warm_memory, recall_timeout=10)
    content: list[dict[str, Any]] = [
        {"type": "input_text", "text": "Summarise the attachments."},
        {"type": "input_image", "image_url": SIGNED, "detail": "low"},
        {"type": "input_image", "file_id": "file-img789", "detail": "auto"},
        {"type": "input_file", "filename": "numbers.csv", "file_data": f"data:text/csv;base64,{PDF}"},
        {"type": "input_file", "file_url": "https://files.example.net/share/board-deck.pdf?token=s3cr3t"},
    ]
    client.responses.create(model="gpt-4o-mini", input=[{"role": "user", "content": content}])
    assert client.memwrap.flush(30)
    retained = _retained(warm_memory, bank)
    assert "Summarise the attachments." in retained
    assert "[image: diagram.png (image/png) from cdn.example.com — detail low]" in retained
    assert "[image: file-img789]" in retained
    assert "[file: numbers.csv (text/csv)]" in retained
    assert "[file: board-deck.pdf (application/pdf) from files.example.net]" in retained
    assert "s3cr3t" not in retained and "/share/" not in retained
    assert "Revenue grew 12%." in retained
    _assert_no_bytes(retained)


# -- Anthropic: image and document blocks, sources base64 / url / file / text -----------------------------------


def test_anthropic_blocks_are_retained_as_placeholders(
    warm_memory: Memory, llm_server: FakeLLMServer, bank: str
) -> None:
    llm_server.script([Reply(text="The contract renews in May.")])
    client = memwrap.wrap_anthropic(anthropic_sdk(llm_server), bank_id=bank, memory=warm_memory, recall_timeout=10)
    content: list[dict[str, Any]] = [
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PNG}},
        {"type": "image", "source": {"type": "url", "url": SIGNED}},
        {
            "type": "document",
            "source": {"type": "base64", "media_type": "application/pdf", "data": PDF},
            "title": "Supplier contract",
            "context": "signed copy from legal",
        },
        {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "Renewal: May."}},
        {"type": "document", "source": {"type": "file", "file_id": "file_011CNha8iCJcU1wXNR6q4V8w"}},
        {"type": "text", "text": "When does it renew?"},
    ]
    client.messages.create(model="claude-sonnet-4-5", max_tokens=256, messages=[{"role": "user", "content": content}])
    assert client.memwrap.flush(30)
    sent = llm_server.requests[-1].body["messages"][-1]["content"]
    assert [b["type"] for b in sent] == ["image", "image", "document", "document", "document", "text"]
    retained = _retained(warm_memory, bank)
    assert "[image (image/png)]" in retained
    assert "[image: diagram.png (image/png) from cdn.example.com]" in retained
    assert "[file: Supplier contract (application/pdf) — signed copy from legal]" in retained
    assert "[file (text/plain)]" in retained
    assert "[file: file_011CNha8iCJcU1wXNR6q4V8w]" in retained
    assert "When does it renew?" in retained and "The contract renews in May." in retained
    _assert_no_bytes(retained)


# -- the reading itself, on the SDK objects' and the dicts' shapes ------------------------------------------------


def test_sdk_objects_read_like_dicts() -> None:
    from anthropic.types import ImageBlockParam  # a TypedDict: the dict shape is the SDK's own
    from openai.types.responses import ResponseInputImage

    image = ResponseInputImage(type="input_image", image_url=f"data:image/gif;base64,{PNG}", detail="auto")
    assert attachment_text(image) == "[image (image/gif)]"
    block: ImageBlockParam = {"type": "image", "source": {"type": "url", "url": "https://x.example/a/b.jpg?sig=1"}}
    assert attachment_text(block) == "[image: b.jpg (image/jpeg) from x.example]"


@pytest.mark.parametrize(
    ("part", "expected"),
    [
        ({"type": "text", "text": "hi"}, None),
        ({"type": "image_url", "image_url": {"url": "data:;base64,AAAA"}}, "[image]"),
        (
            {"type": "image_url", "image_url": "https://h.example/]evil[.png"},
            "[image: )evil(.png (image/png) from h.example]",
        ),
        ({"type": "input_file", "file_data": "JVBERi0xLjcK/abc.def"}, "[file]"),  # raw base64 is no URL
        ({"type": "input_audio", "input_audio": {"data": "AAAA", "format": "mp3"}}, "[audio (audio/mp3)]"),
        (
            {"type": "image", "source": {"type": "base64", "media_type": "image/webp", "data": "AAAA"}},
            "[image (image/webp)]",
        ),
        (
            {
                "type": "document",
                "title": "Lease",
                "source": {"type": "url", "url": "https://d.example/a/lease.pdf?s=1"},
            },
            "[file: Lease (application/pdf) from d.example]",
        ),
    ],
)
def test_placeholders(part: dict[str, Any], expected: str | None) -> None:
    assert attachment_text(part) == expected


def test_every_provider_shape_keeps_the_turn() -> None:
    image = {"type": "image_url", "image_url": {"url": "https://a.example/p.png"}}
    assert chat_turns([{"role": "user", "content": [image]}])[0].text == "[image: p.png (image/png) from a.example]"
    assert responses_turns([{"role": "user", "content": [{"type": "input_file", "file_id": "file-1"}]}])[0].text == (
        "[file: file-1]"
    )
    turns = anthropic_turns(
        [{"role": "user", "content": [{"type": "image", "source": {"type": "file", "file_id": "f"}}]}]
    )
    assert [(t.role, t.text) for t in turns] == [("user", "[image: f]")]
