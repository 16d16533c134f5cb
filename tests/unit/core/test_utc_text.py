"""core/utc_text.py: the second's text made once a second gives exactly the text datetime gives, for records (to the
millisecond, truncated) and, through adapters/warc.py, WARC-Dates (tests/unit/adapters/test_warc.py)."""

from __future__ import annotations

from datetime import UTC, datetime

from hypothesis import given, settings
from hypothesis import strategies as st

from raycrawl.core.pages import iso_utc
from raycrawl.core.utc_text import utc_second_and_micros

TIMES = st.floats(min_value=0, max_value=4_102_444_800, allow_nan=False) | st.integers(0, 4_102_444_800).map(float)


@settings(max_examples=3000, deadline=None)
@given(TIMES)
def test_a_record_time_is_the_one_datetime_writes(at: float) -> None:
    assert iso_utc(at) == datetime.fromtimestamp(at, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@settings(max_examples=3000, deadline=None)
@given(TIMES)
def test_the_second_and_microseconds_are_datetime_s(at: float) -> None:
    moment = datetime.fromtimestamp(at, UTC)
    assert utc_second_and_micros(at) == (moment.strftime("%Y-%m-%dT%H:%M:%S"), moment.microsecond)


def test_a_time_in_another_second_is_not_written_with_the_one_before() -> None:
    # (kept between calls: a later second, an earlier one, and a fraction that rounds up into the next second)
    assert [iso_utc(t) for t in (59.5, 60.0, 59.25, 86_399.999_999_7)] == [
        "1970-01-01T00:00:59.500Z", "1970-01-01T00:01:00.000Z", "1970-01-01T00:00:59.250Z", "1970-01-02T00:00:00.000Z"
    ]  # fmt: skip
