"""raycrawl: a polite, durable, distributed web crawler built on Ray."""
