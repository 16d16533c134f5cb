"""raycrawl's version, written once, in pyproject.toml (a module of its own: the layers below the package root,
actors/settings.py's warcinfo among them, read it without importing the whole API)."""

from importlib import metadata

try:
    __version__ = metadata.version("raycrawl")
except metadata.PackageNotFoundError:  # (run from a source tree that was never installed)
    __version__ = "0+unknown"
