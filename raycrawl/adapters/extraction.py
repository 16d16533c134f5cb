"""Which extractor a crawl runs (issue 47): named in the config, made once in each process that extracts.

A spec is ``builtin:NAME`` (core/extractors.py), or ``module:function`` -- an importable module (the job's working
directory under ``ray job submit``, or an installed package) and a function ``extract(page) -> dict | None`` in it --
or, from Python, the function itself. ``[extract.fields]`` (NAME = "css:...") adds declared fields to what the
spec gives, or are the whole item where there is no spec. Importing a module runs its code: a spec is checked where
the crawl starts (``extraction_problem``), so a name that does not import is a config error there, not every fetch
worker's.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

from raycrawl.core.contract import Extractor
from raycrawl.core.extractors import CssFields, meta
from raycrawl.core.page import Page

BUILTINS: dict[str, Extractor] = {"meta": meta}


def load_function(spec: str) -> Callable[..., Any]:
    """The function ``module:function`` names (ValueError saying why it cannot be had)."""
    module_name, sep, name = spec.partition(":")
    if not sep or not module_name.strip() or not name.strip():
        raise ValueError(f"{spec!r}: expected builtin:NAME or module:function")
    try:
        module = importlib.import_module(module_name.strip())
    except Exception as exc:  # (a module that raises on import is as unusable as a missing one)
        raise ValueError(f"{spec!r}: cannot import {module_name.strip()} ({type(exc).__name__}: {exc})") from None
    function = getattr(module, name.strip(), None)
    if not callable(function):
        raise ValueError(f"{spec!r}: {module_name.strip()} has no function {name.strip()}")
    return function  # type: ignore[no-any-return]


def extractor_from(spec: str | Callable[..., Any] | None, fields: Mapping[str, str] | None = None) -> Extractor | None:
    """The crawl's extractor: the spec's, with the declared fields added; None when neither is given."""
    declared = CssFields.parse(dict(fields)) if fields else None
    base: Extractor | None
    if spec is None or spec == "":
        base = None
    elif callable(spec):
        base = spec
    elif spec.startswith("builtin:"):
        name = spec.removeprefix("builtin:")
        if name not in BUILTINS:
            raise ValueError(f"{spec!r}: the built-in extractors are {', '.join('builtin:' + n for n in BUILTINS)}")
        base = BUILTINS[name]
    else:
        base = load_function(spec)
    if declared is None:
        return base
    if base is None:
        return declared
    return _WithFields(base, declared)


def extraction_problem(spec: str | Callable[..., Any] | None, fields: Mapping[str, str] | None = None) -> str | None:
    """Why the crawl could not make its extractor (None: it can)."""
    try:
        extractor_from(spec, fields)
    except ValueError as exc:
        return str(exc)
    return None


class _WithFields:
    """An extractor's item with the declared fields added (None from the extractor stays None: not a data page)."""

    def __init__(self, base: Extractor, fields: CssFields) -> None:
        self.base, self.fields = base, fields

    def __call__(self, page: Page) -> Mapping[str, Any] | None:
        item = self.base(page)
        if item is None:
            return None
        return {**item, **(self.fields(page) or {})}
