"""The memory defense: secrets and personal identifiers found (policy.scan) and redacted or refused
(policy.apply_policy) before text is stored, spooled, logged or sent to an LLM. Shared by the engine, the wrappers
and the server."""
