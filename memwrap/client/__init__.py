"""Ways to reach the engine: in-process (memwrap.engine) or over HTTP to a sidecar (`http.HttpEngine`)."""
