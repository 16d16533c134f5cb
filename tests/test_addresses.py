"""The address guard as a pure function: no connection is ever made to these addresses."""

import pytest

from raycrawl.core.addresses import address_allowed, parse_networks

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
