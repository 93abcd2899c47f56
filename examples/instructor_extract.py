"""instructor on a wrapped client: structured output that sees what the user said before.

    OPENAI_API_KEY=sk-... python examples/instructor_extract.py

Env: as in openai_chat.py (needs `pip install instructor`).
"""

from __future__ import annotations

import os

import instructor
from openai import OpenAI
from pydantic import BaseModel

import memwrap


class Profile(BaseModel):
    name: str
    city: str
    allergies: list[str]


def main() -> None:
    model = os.environ.get("OPENAI_MODEL", "gpt-4o-mini")
    wrapped = memwrap.wrap_openai(OpenAI(), bank_id=os.environ.get("MEMWRAP_BANK", "example-user"))
    wrapped.chat.completions.create(
        model=model,
        messages=[{"role": "user", "content": "I'm Sam, I live in Leeds, and I'm allergic to peanuts and kiwi."}],
    )
    wrapped.memwrap.flush()

    client = instructor.from_openai(wrapped)  # instructor patches the wrapped create: memory still applies
    profile = client.chat.completions.create(
        model=model,
        response_model=Profile,
        messages=[{"role": "user", "content": "Fill in my profile from what you know about me."}],
    )
    print(profile)


if __name__ == "__main__":
    main()
