"""The memwrap callback for the LiteLLM proxy (see litellm_proxy_config.yaml beside this file).

Memory is the embedded engine under MEMWRAP_HOME, or a `memwrap serve` sidecar when MEMWRAP_URL is set (then
several LiteLLM replicas share one memory service).
"""

import os

from memwrap.integrations.litellm import MemwrapLogger

memwrap_logger = MemwrapLogger(memory=os.environ.get("MEMWRAP_URL") or None, max_tokens=1024, recall_timeout=0.5)
