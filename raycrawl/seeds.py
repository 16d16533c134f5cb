"""Seed URLs: from the arguments and the seeds file, as they will be requested; what is wrong with them, said
before anything starts."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from raycrawl.config import CrawlConfig
from raycrawl.core.addresses import address_allowed, is_ip_literal, parse_networks
from raycrawl.core.urls import canonicalize, host_key, hostname, redact_credentials, request_form
from raycrawl.errors import SeedError


@dataclass(frozen=True, slots=True)
class SeedProblem:
    source: str
    line: int
    text: str

    def __str__(self) -> str:
        return f"{self.source}:{self.line}: not an http(s) URL: {redact_credentials(self.text)!r}"


def seed_urls(
    raw: Iterable[tuple[str, int, str]], tracking_params: tuple[str, ...]
) -> tuple[list[str], list[SeedProblem]]:
    """(source, line, text) seeds as they will be requested (``urls.request_form``: a seed, like a link, is sent
    as written), the first of each canonical URL kept, in order; and the ones that are not http(s) URLs."""
    seeds: list[str] = []
    kept: set[str] = set()
    problems: list[SeedProblem] = []
    for source, number, text in raw:
        canonical = canonicalize(text, tracking_params)
        requested = request_form(text) if canonical is not None else None
        if canonical is None or requested is None:
            problems.append(SeedProblem(source, number, text))
        elif canonical not in kept:
            kept.add(canonical)
            seeds.append(requested)
    return seeds, problems


def load_seeds(cfg: CrawlConfig) -> tuple[list[str], list[SeedProblem]]:
    """Canonical seeds from the config and the seeds file; malformed lines are returned, not raised."""
    raw: list[tuple[str, int, str]] = [("argument", i + 1, s) for i, s in enumerate(cfg.seeds)]
    if cfg.seeds_file:
        try:
            text = Path(cfg.seeds_file).read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise SeedError(f"seeds_file: cannot read {cfg.seeds_file} ({exc.strerror})") from None
        for number, line in enumerate(text.splitlines(), 1):
            line = line.strip()
            if line and not line.startswith("#"):
                raw.append((cfg.seeds_file, number, line))
    seeds, problems = seed_urls(raw, cfg.tracking_params)
    if problems and cfg.strict:
        raise SeedError("; ".join(map(str, problems)))
    if not seeds and not cfg.resume and not cfg.recrawl:
        detail = f" ({problems[0]})" if problems else ""
        raise SeedError(f"no usable seed URL: give seeds as arguments or with --seeds-file{detail}")
    return seeds, problems


def check_seed_addresses(seeds: Iterable[str], cfg: CrawlConfig) -> None:
    """Seeds the address guard would refuse are a mistake to report now, with the flag that allows them -- not a
    crawl that ends at once with "robots.txt unreachable (BlockedAddress)". Checked without DNS (a lookup could
    hang on a machine without a resolver): IP literals, ``--resolve`` entries, and localhost names."""
    networks = parse_networks(cfg.allow_network)
    overrides = cfg.resolve_map()
    for url in seeds:
        host = hostname(host_key(url))
        address = overrides.get(host)
        if address is None and (host == "localhost" or host.endswith(".localhost")):
            address = "127.0.0.1"
        if address is None and is_ip_literal(host):
            address = host
        if address is not None and not address_allowed(address, cfg.allow_private_networks, networks):
            raise SeedError(
                f"seeds: {redact_credentials(url)} is on {address}, an address this crawl may not connect to "
                f"(loopback, private, link-local ...); allow it with --allow-private-networks "
                f"(allow_private_networks=True) or --allow-network {address}/32"
            )
