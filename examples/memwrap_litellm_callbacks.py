"""The memwrap callback for the LiteLLM proxy (see litellm_proxy_config.yaml beside this file).

Memory is the embedded engine under MEMWRAP_HOME, or a `memwrap serve` sidecar when MEMWRAP_URL is set (then
several LiteLLM replicas share one memory service; its key in MEMWRAP_API_KEY). MEMWRAP_RECALL_TIMEOUT (seconds,
default 0.5): how long a request may wait for memory before it goes on without it.
"""

import os

from memwrap.integrations.litellm import MemwrapLogger

memwrap_logger = MemwrapLogger(
    memory=os.environ.get("MEMWRAP_URL") or None,
    token_budget=1024,
    recall_timeout=float(os.environ.get("MEMWRAP_RECALL_TIMEOUT", "0.5")),
)
