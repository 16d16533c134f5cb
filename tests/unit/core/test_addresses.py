"""The address guard as a pure function: no connection is ever made to these addresses."""

import ipaddress

import pytest
from hypothesis import given
from hypothesis import strategies as st

from raycrawl.core.addresses import address_allowed, parse_networks
from raycrawl.core.urls import canonicalize, host_key, hostname

BLOCKED = [
    "127.0.0.1",
    "127.8.9.10",
    "10.1.2.3",
    "172.16.0.1",
    "172.31.255.255",
    "192.168.1.1",
    "169.254.169.254",
    "100.64.0.1",
    "0.0.0.0",
    "224.0.0.1",
    "239.255.255.250",
    "240.0.0.1",
    "255.255.255.255",
    "::1",
    "::",
    "fc00::1",
    "fd12:3456::1",
    "fe80::1",
    "fe80::1%eth0",
    "::ffff:127.0.0.1",
    "::ffff:10.0.0.1",
    "ff02::1",
    "2002:7f00:0001::1",
    # Denied by name, whatever this Python's ipaddress tables say (they changed between patch releases):
    "fec0::1",  # deprecated IPv6 site-local
    "feff::1",
    "::ffff:fec0:1",
    "192.0.0.1",
    "192.0.0.9",  # (some releases call 192.0.0.9/32 and 192.0.0.10/32 global)
    "192.0.0.10",
    "192.0.0.170",
    "192.0.0.255",
    "not-an-ip",
]
ALLOWED = ["8.8.8.8", "1.1.1.1", "93.184.216.34", "2606:4700:4700::1111", "::ffff:8.8.8.8"]


@pytest.mark.parametrize("address", BLOCKED)
def test_private_and_special_addresses_are_blocked(address: str) -> None:
    assert not address_allowed(address, allow_private=False)


@pytest.mark.parametrize("address", ALLOWED)
def test_public_addresses_are_allowed(address: str) -> None:
    assert address_allowed(address, allow_private=False)


def test_opt_ins() -> None:
    assert address_allowed("10.1.2.3", allow_private=True)
    nets = parse_networks(["127.0.0.0/29"])
    assert address_allowed("127.0.0.5", False, nets)
    assert not address_allowed("127.0.0.9", False, nets)


# Every spelling a page could use for a blocked address: the URL's host is normalised to what would be
# connected to (as browsers and getaddrinfo read it) before the guard decides.
SPELLINGS = {
    "127.0.0.1": [
        "127.0.0.1",
        "2130706433",
        "0x7f000001",
        "0x7F.0.0.1",
        "0177.0.0.1",
        "017700000001",
        "127.1",
        "127.0.1",
        "0x7f.1",
        "127.000.000.001",
        "127.0.0.1.",
    ],
    "169.254.169.254": [
        "169.254.169.254",
        "2852039166",
        "0xa9fea9fe",
        "0251.0376.0251.0376",
        "169.254.43518",
        "0xa9.0xfe.0xa9.0xfe",
    ],
    "10.0.0.1": ["10.0.0.1", "167772161", "012.0.0.1", "10.1"],
    "192.168.0.1": ["192.168.0.1", "3232235521", "0xc0a80001", "192.168.1"],
    "0.0.0.0": ["0", "0x0", "0.0.0.0", "00"],
}
IPV6_FORMS = [
    "[::1]",
    "[0:0:0:0:0:0:0:1]",
    "[::ffff:127.0.0.1]",
    "[::ffff:7f00:1]",
    "[::ffff:a9fe:a9fe]",
    "[fe80::1]",
    "[fd00::1]",
    "[::ffff:10.0.0.1]",
    "[::]",
]


@pytest.mark.parametrize(("address", "host"), [(a, h) for a, hs in SPELLINGS.items() for h in hs])
def test_every_ipv4_spelling_normalises_to_the_address_and_is_blocked(address: str, host: str) -> None:
    url = canonicalize(f"http://{host}:8080/x")
    assert url == f"http://{address}:8080/x"
    assert not address_allowed(hostname(host_key(url)), allow_private=False)


@pytest.mark.parametrize("host", IPV6_FORMS)
def test_ipv6_and_ipv4_mapped_forms_are_blocked(host: str) -> None:
    url = canonicalize(f"http://{host}/")
    assert url is not None
    assert not address_allowed(hostname(host_key(url)), allow_private=False)


@pytest.mark.parametrize(
    "host", ["256.1.1.1", "1.2.3.4.5", "09.1.1.1", "0x1g.1.1.1", "1.2.3.0x100000000", "example.42"]
)
def test_hosts_ending_in_a_bad_number_are_not_urls(host: str) -> None:
    assert canonicalize(f"http://{host}/") is None


@given(st.integers(min_value=0, max_value=2**32 - 1))
def test_decimal_hex_and_octal_spellings_agree(n: int) -> None:
    dotted = str(ipaddress.IPv4Address(n))
    for spelling in (str(n), hex(n), "0" + oct(n)[2:]):
        assert canonicalize(f"http://{spelling}/") == f"http://{dotted}/"
