"""robots.txt to the letter of RFC 9309, with Google's open-source parser where the RFC is silent.

Why not protego (used before): it picks a group by substring (``User-agent: ray`` applied to ``raycrawl``), keeps
the whole file per host, and its matching cost is unbounded. Here:

- A file is parsed once, for one product token, into the rules of the groups that apply to it (RFC 9309 2.2.1:
  every group naming the token, compared case-insensitively as a whole word; else every ``*`` group). Only those
  rules are kept: a host's robots state is its own group, not the file.
- A UTF-8 byte order mark (also a partial one, as Google's parser allows) is skipped; lines end in CR, LF or
  CRLF; ``#`` starts a comment; a missing colon is read as a space (Google: ``disallow /`` means what it says).
- Patterns and the path they are compared with are both normalised as RFC 9309 2.2.2 asks (``normalize_escapes``):
  octets outside printable US-ASCII become ``%XX``, escapes of unreserved characters are decoded (``%7E`` is
  ``~``), other escapes upper-cased. So ``Disallow: /%7Ejoe/`` stops ``/~joe/x``, ``Disallow: /~joe/`` stops
  ``/%7Ejoe/x``, and ``Disallow: /foo/bar/ツ`` stops ``/foo/bar/%E3%83%84`` (the RFC's own table; Google's parser
  leaves ``%62%61%7A`` undecoded, which the RFC does not).
- The most specific match (most octets in the pattern) wins; on a tie, allow wins. ``/robots.txt`` is always
  allowed.

What a hostile file can cost is bounded (``RobotsLimits``): lines are cut at 16,663 characters (Google's
buffer of 8 x 2,083), at most ``max_rules`` rules are kept per group (past that the rest of the group counts as
``Disallow: /``), at most ``max_wildcard_rules`` of them may hold ``*`` (a Disallow past that keeps its literal
prefix, a superset; an Allow past that is dropped), and a pattern keeps at most ``max_wildcards`` ``*`` (cut
after the last one kept: for a Disallow a superset; an Allow with more is dropped). Every choice errs towards
fetching less, and each is counted in ``RobotsGroup.simplified``. A decision is a few set lookups for plain
prefix rules plus at most ``max_wildcard_rules x (max_wildcards + 1)`` substring searches, each in C.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

MAX_LINE_CHARS = 8 * 2083 - 1  # Google's robots parser keeps this much of a line (a buffer of 8 x 2,083)
_BOM = b"\xef\xbb\xbf"
_TOKEN = re.compile(r"[A-Za-z_-]+")
# Products in a browser-style User-Agent that are never a crawler's own name.
_GENERIC_PRODUCTS = frozenset(
    {"mozilla", "applewebkit", "khtml", "gecko", "chrome", "chromium", "safari", "firefox", "version", "mobile",
     "edg", "edge", "opr", "opera", "trident", "like", "compatible", "windows", "linux", "x11", "macintosh"}
)  # fmt: skip
_ESCAPE = re.compile(r"%[0-9A-Fa-f]{2}|[^\x21-\x7e]")
_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")  # RFC 3986 2.3


def product_token(user_agent: str) -> str | None:
    """The product token robots.txt groups are matched against (RFC 9309 2.2.1: letters, ``_`` and ``-``).

    'raycrawl/0.1 (+https://…)' -> 'raycrawl'; 'Mozilla/5.0 (compatible; examplebot/1.0; +https://…)' ->
    'examplebot' (the first product that is not a browser's); None when the user agent names none.
    """
    products: list[str] = re.findall(r"([A-Za-z_-]+)/", user_agent)
    for name in products:
        if name.lower() not in _GENERIC_PRODUCTS:
            return name.lower()
    first = _TOKEN.match(user_agent.strip())
    if first is not None and first.group().lower() not in _GENERIC_PRODUCTS:
        return first.group().lower()
    return None


def _normalize_one(match: re.Match[str]) -> str:
    text = match.group()
    if text[0] == "%" and len(text) == 3:
        char = chr(int(text[1:], 16))
        return char if char in _UNRESERVED else text.upper()
    return "".join(f"%{b:02X}" for b in text.encode("utf-8", "surrogateescape"))


def normalize_escapes(text: str) -> str:
    """A path, or a rule's pattern, in the one form RFC 9309 2.2.2 compares: octets outside printable US-ASCII
    as ``%XX``, escapes of unreserved characters (RFC 3986 2.3) decoded, other escapes upper-cased (``%aa`` ->
    ``%AA``). Idempotent; ``*`` and ``$`` keep their meaning (their escapes stay escapes: reserved)."""
    if text.isascii() and "%" not in text and " " not in text and text.isprintable():
        return text  # (the common case, a plain path: nothing to do)
    return _ESCAPE.sub(_normalize_one, text)


@dataclass(frozen=True, slots=True)
class RobotsLimits:
    max_rules: int = 2000
    max_wildcard_rules: int = 100
    max_wildcards: int = 8


@dataclass(frozen=True, slots=True)
class _Wildcard:
    length: int  # the precedence of the rule: its pattern's length as written (escaped)
    allow: bool
    first: str  # the literal part before the first '*'
    middle: tuple[str, ...]  # the literal parts between '*'s
    last: str  # the literal part after the last '*'
    anchored: bool  # the pattern ended in '$'
    min_length: int  # a path shorter than this cannot match

    @classmethod
    def of(cls, allow: bool, pattern: str) -> _Wildcard:
        anchored = pattern.endswith("$")
        pieces = (pattern[:-1] if anchored else pattern).split("*")  # (at least two: the pattern has a '*')
        return cls(len(pattern), allow, pieces[0], tuple(pieces[1:-1]), pieces[-1], anchored, sum(map(len, pieces)))

    def matches(self, path: str) -> bool:
        """Greedy leftmost matching of the pieces (exact for '*'-only globs): one ``str.find`` (C, linear) per
        piece, so a rule costs at most ``max_wildcards + 1`` searches of the path, whatever it says.
        (A regex of lazy ``.*?`` groups, tried instead, was 3x slower on the worst case.)"""
        if len(path) < self.min_length or not path.startswith(self.first):
            return False
        pos = len(self.first)
        for piece in self.middle:
            at = path.find(piece, pos)
            if at < 0:
                return False
            pos = at + len(piece)
        if self.anchored:
            return len(path) - len(self.last) >= pos and path.endswith(self.last)
        return path.find(self.last, pos) >= 0


@dataclass(frozen=True, slots=True)
class RobotsGroup:
    """The rules of a robots.txt that apply to one product token, ready to decide."""

    rules: tuple[tuple[bool, str], ...] = ()  # (allow, escaped pattern), as kept
    crawl_delay: float | None = None
    simplified: int = 0  # rules cut, reduced or dropped by the limits (see module doc)
    _prefixes: dict[int, dict[str, bool]] = field(default_factory=dict, repr=False, compare=False)
    _lengths: tuple[int, ...] = field(default=(), repr=False, compare=False)
    _exact: dict[str, bool] = field(default_factory=dict, repr=False, compare=False)
    _wildcards: tuple[_Wildcard, ...] = field(default=(), repr=False, compare=False)

    @classmethod
    def of(cls, rules: list[tuple[bool, str]], crawl_delay: float | None = None, simplified: int = 0) -> RobotsGroup:
        """A group from kept rules (already within the limits): indexed for cheap decisions."""
        prefixes: dict[int, dict[str, bool]] = {}
        exact: dict[str, bool] = {}
        wildcards: list[_Wildcard] = []
        for allow, pattern in rules:
            if "*" in pattern:
                wildcards.append(_Wildcard.of(allow, pattern))
            elif pattern.endswith("$"):
                exact[pattern[:-1]] = exact.get(pattern[:-1], False) or allow
            else:
                by_length = prefixes.setdefault(len(pattern), {})
                by_length[pattern] = by_length.get(pattern, False) or allow
        wildcards.sort(key=lambda w: (-w.length, not w.allow))
        lengths = tuple(sorted(prefixes, reverse=True))
        return cls(tuple(rules), crawl_delay, simplified, prefixes, lengths, exact, tuple(wildcards))

    def allows(self, path: str) -> bool:
        """May ``path`` (path and query, as requested) be fetched? It is compared in the rules' form."""
        if path == "/robots.txt":
            return True
        path = normalize_escapes(path)
        best_length, best_allow = -1, True
        for length in self._lengths:  # longest first: the first prefix found is the longest
            if length > len(path):
                continue
            allow = self._prefixes[length].get(path[:length])
            if allow is not None:
                best_length, best_allow = length, allow
                break
        exact = self._exact.get(path)
        if exact is not None:
            length = len(path) + 1  # (the pattern as written ends in '$')
            if length > best_length or (length == best_length and exact):
                best_length, best_allow = length, exact
        for rule in self._wildcards:  # longest first, allow first among equals
            if rule.length < best_length or (rule.length == best_length and best_allow):
                break
            if rule.matches(path):
                best_length, best_allow = rule.length, rule.allow
                break
        return best_allow

    def to_dict(self) -> dict[str, Any]:
        return {"rules": [[int(a), p] for a, p in self.rules], "crawl_delay": self.crawl_delay,
                "simplified": self.simplified}  # fmt: skip

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> RobotsGroup:
        # (patterns normalised again: a checkpoint of an older raycrawl kept unreserved characters escaped)
        rules = [(bool(a), normalize_escapes(str(p))) for a, p in d["rules"]]
        return cls.of(rules, d.get("crawl_delay"), int(d.get("simplified", 0)))


def _lines(body: bytes) -> list[str]:
    for n in (3, 2, 1):  # a whole or partial UTF-8 BOM (Google accepts partial ones too)
        if body.startswith(_BOM[:n]):
            body = body[n:]
            break
    text = body.decode("utf-8", "surrogateescape")  # (invalid bytes survive, to be percent-encoded as they were)
    return [line[:MAX_LINE_CHARS] for line in re.split(r"\r\n|\r|\n", text)]


def _key_value(line: str) -> tuple[str, str] | None:
    line = line.split("#", 1)[0].strip()
    if not line:
        return None
    key, sep, value = line.partition(":")
    if not sep:  # Google: a missing colon, when a space separates key and value
        key, sep, value = line.partition(" ")
        if not sep:
            key, sep, value = line.partition("\t")
            if not sep:
                return None
    return key.strip().lower(), value.strip()


def _crawl_delay(value: str) -> float | None:
    try:
        delay = float(value)
    except ValueError:
        return None
    return delay if delay >= 0 and delay == delay and delay != float("inf") else None


@dataclass(slots=True)
class _GroupRules:
    """The rules and crawl-delay read for one side: our token's groups, or the ``*`` groups."""

    rules: list[tuple[bool, str]] = field(default_factory=list)
    delay: float | None = None

    def take(self, key: str, value: str) -> None:
        if key == "crawl-delay":
            if self.delay is None:  # (the first usable one counts)
                self.delay = _crawl_delay(value)
        elif value:  # (an empty rule matches nothing: RFC 9309 2.2.2)
            self.rules.append((key == "allow", normalize_escapes(value)))


def parse_robots(body: bytes, token: str, limits: RobotsLimits | None = None) -> RobotsGroup:
    """The rules of ``body`` (a robots.txt) that apply to the product ``token``."""
    limits = limits or RobotsLimits()
    token = token.lower()
    specific, general = _GroupRules(), _GroupRules()
    found_specific = False
    agents: list[str] = []  # the user agents of the group being read
    in_rules = False  # a rule has been read since the last user-agent line: the next one starts a group
    for line in _lines(body):
        kv = _key_value(line)
        if kv is None:
            continue
        key, value = kv
        if key == "user-agent":
            if in_rules:
                agents, in_rules = [], False
            name = "*" if value.startswith("*") else (m.group().lower() if (m := _TOKEN.match(value)) else "")
            if name:
                agents.append(name)
                found_specific = found_specific or name == token
        elif key in ("allow", "disallow", "crawl-delay"):  # (sitemap and unknown lines neither join nor end a group)
            in_rules = True
            if token in agents:
                specific.take(key, value)
            if "*" in agents:
                general.take(key, value)
    chosen = specific if found_specific else general
    return _within_limits(chosen.rules, chosen.delay, limits)


MAX_SITEMAP_LINES = 50  # Sitemap: lines taken from one robots.txt (more is a file made to cost us work)


def robots_sitemaps(body: bytes, limit: int = MAX_SITEMAP_LINES) -> tuple[str, ...]:
    """The URLs of the file's ``Sitemap:`` lines (RFC 9309 2.2.4: they belong to no group), first ``limit``,
    without repeats."""
    found: dict[str, None] = {}
    for line in _lines(body):
        kv = _key_value(line)
        if kv is not None and kv[0] == "sitemap" and kv[1]:
            found[kv[1]] = None
            if len(found) >= limit:
                break
    return tuple(found)


def _within_limits(rules: list[tuple[bool, str]], delay: float | None, limits: RobotsLimits) -> RobotsGroup:
    kept: list[tuple[bool, str]] = []
    wildcard_rules = 0
    simplified = 0
    for allow, pattern in rules:
        if len(kept) >= limits.max_rules:
            simplified += len(rules) - limits.max_rules
            kept.append((False, "/"))  # the rest of the group: disallow what no kept rule allows
            break
        stars = pattern.count("*")
        if stars:
            if stars > limits.max_wildcards or wildcard_rules >= limits.max_wildcard_rules:
                simplified += 1
                if allow:
                    continue  # an Allow cut short would allow more than it says: dropped
                if wildcard_rules >= limits.max_wildcard_rules:
                    pattern = pattern.split("*", 1)[0] or "/"  # its literal prefix: matches a superset
                else:
                    pattern = "*".join(pattern.split("*")[: limits.max_wildcards]) + "*"
            if "*" in pattern:
                wildcard_rules += 1
        kept.append((allow, pattern))
    return RobotsGroup.of(kept, delay, simplified)
