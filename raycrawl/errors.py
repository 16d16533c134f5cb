"""raycrawl's own exception tree.

Expected crawl outcomes (a 404, a robots denial, a duplicate) are values, never exceptions. These exceptions
are for the operator: bad configuration, bad seeds, an unreachable service. The CLI turns each into a one-line
message and a documented exit code instead of a traceback.
"""

from __future__ import annotations


class RaycrawlError(Exception):
    """Base class: anything raycrawl reports to the operator."""

    exit_code = 1


class ConfigError(RaycrawlError):
    """A configuration key or value is wrong; the message names the key and the expected form.

    ``key``: the setting it is about, so that the loader can say where the value came from (a flag, a line of
    the TOML file, an environment variable).
    """

    exit_code = 2

    def __init__(self, message: str, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


class SeedError(RaycrawlError):
    """No usable seed, or a malformed seed under --strict."""

    exit_code = 2


class ServiceError(RaycrawlError):
    """A service the crawl needs (Ray, Redis) cannot be reached."""

    exit_code = 3


class CrawlNotFound(RaycrawlError):
    """No running crawl of that id on the cluster (``Crawl.attach``, ``raycrawl status --crawl-id``)."""

    exit_code = 4


class UnknownHost(RaycrawlError):
    """A host control (pause-host, resume-host, set-delay) named a host the crawl has not seen."""

    exit_code = 5
