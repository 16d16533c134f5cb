"""The test web: a deterministic multi-host web on loopback, for tests, benchmarks and ``raycrawl demo``."""

from raycrawl.testing.graph import WebGraph, WebSpec
from raycrawl.testing.process import TestWeb, free_port, free_ports

__all__ = ["TestWeb", "WebGraph", "WebSpec", "free_port", "free_ports"]
