"""The records that cross Ray pickle as their field values, and come back equal, field for field."""

from __future__ import annotations

import dataclasses
import pickle

import cloudpickle
import pytest

from raycrawl.core.records import Ack, FetchResult, Lease, Terminal, UrlEntry, compact_pickle


def _samples() -> list[object]:
    entry = UrlEntry("http://a.test/p", 3, "http://a.test/", 2, ("http://a.test/old",))
    lease = Lease(7, 2, "page", 10.5, 130.5, entry)
    result = FetchResult(
        lease, 200, "http://a.test/p2", 11.0, 11.2, 200.0, "text/html", 512, "ab" * 32, ["http://b.test/"],
        None, True, b"robots", 99.0, True, "n1",
    )  # fmt: skip
    ack = Ack(7, 503, 11.2, 0.2, True, "ReadTimeout", b"x", 40.0)
    return [entry, lease, result, ack, Terminal(entry, "too_large", "why")]


def test_every_field_survives_pickle_and_cloudpickle() -> None:
    for value in _samples():
        for dumps, loads in ((pickle.dumps, pickle.loads), (cloudpickle.dumps, pickle.loads)):
            back = loads(dumps(value))
            assert type(back) is type(value) and back == value
            for f in dataclasses.fields(value):  # type: ignore[arg-type]
                assert getattr(back, f.name) == getattr(value, f.name)


def test_the_pickle_holds_no_field_names() -> None:
    blob = pickle.dumps(_samples())
    for value in _samples():
        for f in dataclasses.fields(value):  # type: ignore[arg-type]
            assert f.name.encode() not in blob, f"{type(value).__name__}.{f.name} pickled by name"


def test_compact_pickle_refuses_a_dataclass_it_could_not_rebuild() -> None:
    @dataclasses.dataclass
    class Derived:
        a: int
        b: int = dataclasses.field(init=False, default=0)

    with pytest.raises(TypeError, match="all set by __init__"):
        compact_pickle(Derived)
