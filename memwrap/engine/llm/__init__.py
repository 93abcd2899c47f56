"""The LLM the engine uses for its own work (client.py), the provider adapters under it (providers.py over the
neutral shapes of types.py), how fast a server may be called (pacing.py) and what it can do (capabilities.py)."""
