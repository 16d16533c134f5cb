import random
from email.utils import formatdate

from hypothesis import given
from hypothesis import strategies as st

from raycrawl.core.headers import parse_retry_after
from raycrawl.core.politeness import DelayPolicy, backoff, host_delay

NOW = 1_800_000_000.0


def test_retry_after_both_forms() -> None:
    assert parse_retry_after("3", NOW) == NOW + 3
    assert parse_retry_after(" 120 ", NOW) == NOW + 120
    assert parse_retry_after(formatdate(NOW + 30, usegmt=True), NOW) == NOW + 30
    assert parse_retry_after(formatdate(NOW - 300, usegmt=True), NOW) == NOW  # in the past: now
    assert parse_retry_after("99999999999999999999", NOW) == NOW + 999999999999  # absurd: the caller caps it
    for bad in (None, "", "soon", "-5", "3.5", "Mon, 99 Foo 2026 99:99:99 GMT"):
        assert parse_retry_after(bad, NOW) is None


@given(st.text(max_size=60))
def test_retry_after_never_raises(value: str) -> None:
    result = parse_retry_after(value, NOW)
    assert result is None or result >= NOW


def test_delay_model_terms_and_reasons() -> None:
    p = DelayPolicy(delay=1.0, delay_factor=2.0, min_delay=0.5, max_delay=20.0, max_crawl_delay=10.0)
    assert host_delay(p, None, 0.1) == (1.0, "configured")
    assert host_delay(p, 5.0, 0.1) == (5.0, "robots")
    assert host_delay(p, 50.0, 0.1) == (10.0, "robots")  # Crawl-delay capped
    assert host_delay(p, None, 3.0) == (6.0, "latency")
    assert host_delay(p, None, 30.0) == (20.0, "max_delay")
    assert host_delay(DelayPolicy(delay=0.0, delay_factor=0.0, min_delay=0.2), None, 0.0) == (0.2, "min_delay")


def test_backoff_grows_with_jitter_and_is_capped() -> None:
    p = DelayPolicy(backoff_base=1.0, max_backoff=10.0)
    rng = random.Random(3)
    steps = [backoff(p, n, rng) for n in range(1, 8)]
    assert 1.0 <= steps[0] < 1.5
    assert steps[0] < steps[1] < steps[2] < steps[3]
    assert max(steps) == 10.0
