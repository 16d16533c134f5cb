"""One map from a fetch's exception to its record's error, whether it is tried again, and a fault
(adapters/fetch_errors.py)."""

from __future__ import annotations

import aiohttp
import pytest
from multidict import CIMultiDict, CIMultiDictProxy
from yarl import URL

from raycrawl.adapters.address_guard import BlockedAddress
from raycrawl.adapters.fetch_errors import RedirectFailed, fetch_error
from raycrawl.core.decoding import DecodingError


@pytest.mark.parametrize(
    ("exc", "error", "transient", "fault"),
    [
        (aiohttp.ClientHttpProxyError(None, (), status=407), "ClientHttpProxyError", True, None),  # type: ignore[arg-type]
        (aiohttp.ServerDisconnectedError(), "ServerDisconnectedError", True, None),
        (aiohttp.InvalidURL("x"), "InvalidURL", False, None),
        (TimeoutError(), "Deadline: not done in 30 s", True, None),
        (ConnectionResetError(), "ConnectionResetError", True, None),
        (BlockedAddress("10.0.0.1"), "BlockedAddress", False, None),
        (RedirectFailed("no Location"), "RedirectFailed", True, None),
        (ValueError("bad"), "ValueError", False, None),
        (KeyError("boom"), "KeyError: 'boom'", False, "KeyError"),
    ],
)
def test_each_kind_of_failure_has_its_error_and_whether_it_is_tried_again(
    exc: Exception, error: str, transient: bool, fault: str | None
) -> None:
    assert fetch_error(exc, 30.0) == (error, transient, fault)


def test_a_body_that_does_not_decode_says_why_and_a_refused_response_is_not_tried_again() -> None:
    got, transient, fault = fetch_error(DecodingError("gzip stream is corrupt"), 30.0)
    assert "gzip stream is corrupt" in got and not transient and fault is None
    url = URL("http://a.test/")
    request = aiohttp.RequestInfo(url, "GET", CIMultiDictProxy(CIMultiDict()), url)
    refused = aiohttp.ClientResponseError(request, (), status=400, message="Invalid header")
    got, transient, fault = fetch_error(refused, 30.0)
    assert "Invalid header" in got and not transient and fault is None
