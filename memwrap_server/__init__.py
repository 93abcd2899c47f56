"""memwrap_server: the sidecar (REST API, memory proxy, MCP). Run it with `memwrap serve`."""
