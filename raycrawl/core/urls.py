"""URL canonicalisation and fingerprints.

One canonical form per page, so dedup can work on fixed-width fingerprints. The rules merge only spellings
that every server treats alike (scheme and host case, default ports, dot segments, escapes of unreserved
characters, parameter order, tracking parameters, fragments) and never ones a server may treat differently:
path case is preserved (crawlee-python #2008) and reserved characters stay escaped.
"""

from __future__ import annotations

import fnmatch
import functools
import hashlib
import ipaddress
import re
from collections.abc import Iterable
from urllib.parse import urlsplit

import idna

DEFAULT_PORTS = {"http": 80, "https": 443}
FETCHABLE_SCHEMES = frozenset(DEFAULT_PORTS)
MAX_URL_LENGTH = 2083  # Internet Explorer's limit, adopted by Scrapy; longer URLs are mostly traps
MAX_HOST_LENGTH = 253  # RFC 1035's bound on a name, written without its final dot (a longer one resolves nowhere)

_UNRESERVED = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
_SUB_DELIMS = frozenset("!$&'()*+,;=")
_PATH_SAFE = _UNRESERVED | _SUB_DELIMS | frozenset(":@/")
# In a query part '&' and '=' are separators and '+' may mean space: they stay as they are or escaped.
_QUERY_SAFE = _UNRESERVED | frozenset("!$'()*+,;:@/?")
_HEX = frozenset("0123456789abcdefABCDEF")
_HOST_LABEL = re.compile(r"^[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?$")


def _escape_pattern(safe: frozenset[str]) -> re.Pattern[str]:
    """What ``_normalise_escapes`` must touch: an escape (``%XX``), or any character outside ``safe``."""
    return re.compile("%[0-9A-Fa-f]{2}|[^" + "".join(re.escape(c) for c in sorted(safe)) + "]")


def _normalise_one(match: re.Match[str]) -> str:
    text = match.group()
    if len(text) == 3:  # an escape: decoded if it stands for an unreserved character, else upper-cased
        decoded = chr(int(text[1:], 16))
        return decoded if decoded in _UNRESERVED else text.upper()
    return _percent_encoded(text)


def _percent_encoded(text: str) -> str:
    """``%XX`` for each byte of ``text`` in UTF-8. A byte that was not UTF-8 where the text came from (aiohttp
    decodes headers with surrogate escapes) is encoded as that byte, as curl does with such a Location."""
    try:
        data = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:  # surrogates that are no escape: encoded as code points
        data = text.encode("utf-8", "surrogatepass")
    return "".join(f"%{b:02X}" for b in data)


def _normalise_escapes(text: str, pattern: re.Pattern[str]) -> str:
    """Decode escapes of unreserved characters, upper-case the rest, escape what must be escaped.

    ``pattern`` is ``_escape_pattern(safe)``: most URLs have nothing for it to match and pass through at the
    speed of one regex search. The result is a fixed point (idempotence is property-tested).
    """
    if pattern.search(text) is None:
        return text
    return pattern.sub(_normalise_one, text)


_PATH_ESCAPES = _escape_pattern(_PATH_SAFE)
_QUERY_ESCAPES = _escape_pattern(_QUERY_SAFE)


def _remove_dot_segments(path: str) -> str:
    """RFC 3986 section 5.2.4, on an absolute path."""
    if "/." not in path:
        return path  # no segment is "." or ".." (the usual case)
    segments = path.split("/")
    out: list[str] = []
    for seg in segments[1:]:
        if seg == "..":
            if out:
                out.pop()
        elif seg != ".":
            out.append(seg)
    resolved = "/" + "/".join(out)
    if segments[-1] in (".", "..") and not resolved.endswith("/"):
        resolved += "/"
    return resolved


def _canonical_host(host: str) -> str | None:
    """The canonical host, or None if it is not one.

    Cached, because a page's links name few hosts over and over; only short names, so hostile pages full of
    long made-up hosts cannot make the cache large (a DNS name has at most 253 characters).
    """
    return _cached_host(host) if len(host) <= _CACHED_HOST_LENGTH else _host_from_text(host)


def _host_from_text(host: str) -> str | None:
    host = host.strip().rstrip(".").lower()
    if not host:
        return None
    if host.startswith("["):
        if not host.endswith("]"):
            return None
        try:
            return "[" + ipaddress.IPv6Address(host[1:-1]).compressed + "]"
        except ValueError:
            return None
    if host.isascii():
        ascii_host = host
    else:
        try:
            ascii_host = idna.encode(host, uts46=True).decode("ascii")
        except (idna.IDNAError, UnicodeError, ValueError):
            return None
    # WHATWG URL: the number check comes after domain-to-ASCII ("¹" maps to "1", an IPv4 address).
    if _ends_in_number(ascii_host):
        return _ipv4_from_number_host(ascii_host)
    if len(ascii_host) > MAX_HOST_LENGTH:  # (labels within 63 each can still make one no DNS name can be)
        return None
    labels = ascii_host.split(".")
    if not all(_HOST_LABEL.match(label) for label in labels):
        return None
    return ascii_host


_CACHED_HOST_LENGTH = 256
_cached_host = functools.lru_cache(maxsize=65_536)(_host_from_text)

_USERINFO = re.compile(r"(?<=//)[^/?#@\s]*@")
_SECRET_PARAM = re.compile(r"(?i)([?&;](?:password|passwd|pass|pwd|secret|token|access_key|auth)=)[^&#\s]*")


def redact_credentials(text: str) -> str:
    """The text with any ``user:pass@`` after a ``//`` removed, and the values of query parameters that carry
    secrets (``?password=…``, as Redis URLs may) replaced by ``***``: for messages about URLs."""
    return _SECRET_PARAM.sub(r"\1***", _USERINFO.sub("", text))


def _ends_in_number(host: str) -> bool:
    """WHATWG URL: a host whose last label is a number is an IPv4 address, whatever else it looks like."""
    last = host.rsplit(".", 1)[-1]
    if last.isascii() and last.isdigit():
        return True
    return last[:2] == "0x" and all(c in _HEX for c in last[2:])


def _ipv4_part(part: str) -> int | None:
    if not part.isascii():
        return None
    if part[:2] == "0x":
        digits, base = part[2:], 16
        if digits == "":
            return 0
    elif len(part) > 1 and part[0] == "0":
        digits, base = part[1:], 8
    else:
        digits, base = part, 10
    try:
        return int(digits, base) if digits and digits.isalnum() else None
    except ValueError:
        return None


def _ipv4_from_number_host(host: str) -> str | None:
    """Dotted-decimal form of an IPv4 host written in decimal, hex, octal or short form (127.1, 0x7f000001,
    0177.0.0.1, 2130706433), as browsers read them: the address guard must see what would be connected to."""
    parts = host.split(".")
    if len(parts) > 4:
        return None
    numbers = [_ipv4_part(p) for p in parts]
    if any(n is None for n in numbers):
        return None
    values = [n for n in numbers if n is not None]
    if any(n > 255 for n in values[:-1]) or values[-1] >= 256 ** (5 - len(values)):
        return None
    address = values[-1]
    for i, n in enumerate(values[:-1]):
        address += n << (8 * (3 - i))
    return str(ipaddress.IPv4Address(address))


@functools.lru_cache(maxsize=64)
def _tracking_pattern(tracking: tuple[str, ...]) -> re.Pattern[str]:
    """One regex for all the tracking-parameter patterns (fnmatch syntax), compiled once per configuration."""
    return re.compile("|".join(fnmatch.translate(pattern) for pattern in tracking))


def _is_tracking(name: str, tracking: tuple[str, ...]) -> bool:
    return _tracking_pattern(tracking).match(name.lower()) is not None


# WHATWG URL: leading and trailing C0 controls and spaces are stripped, tabs and newlines removed anywhere;
# nothing else (U+00A0 and U+3000 are part of the URL, and get percent-encoded).
C0_OR_SPACE = "".join(map(chr, range(0x21)))
_NO_TAB_OR_NEWLINE = str.maketrans("", "", "\t\n\r")


def _split(url: str) -> tuple[str, str, str, str] | None:
    """(scheme, canonical netloc, raw path, raw query) of an absolute http(s) URL, or None; credentials dropped.

    Shared by the canonical form (the dedup key) and the request form (what is sent), so both agree on the host.
    """
    if not isinstance(url, str) or len(url) > 4 * MAX_URL_LENGTH:
        return None
    url = url.strip(C0_OR_SPACE)
    if "\t" in url or "\n" in url or "\r" in url:  # (rare: the translation only when needed)
        url = url.translate(_NO_TAB_OR_NEWLINE)
    if "\\" in url:  # in an http(s) URL a backslash before the query is a slash, as browsers read it
        end = min((i for i in (url.find("?"), url.find("#")) if i >= 0), default=len(url))
        url = url[:end].replace("\\", "/") + url[end:]
    scheme, full_netloc, path, query = _url_parts(url)
    if scheme not in FETCHABLE_SCHEMES:
        return None
    # the netloc keeps user:pass@; credentials never survive.
    hostinfo = full_netloc.rpartition("@")[2]
    if hostinfo.startswith("["):
        host, _, rest = hostinfo.partition("]")
        host += "]"
        port_text = rest[1:] if rest.startswith(":") else ("" if not rest else None)
    else:
        host, _, port_text = hostinfo.partition(":")
    if port_text is None or (port_text and not port_text.isdigit()):
        return None
    port = int(port_text) if port_text else DEFAULT_PORTS[scheme]
    if not 0 < port < 65536:
        return None
    canon_host = _canonical_host(host)
    if canon_host is None:
        return None
    netloc = canon_host if port == DEFAULT_PORTS[scheme] else f"{canon_host}:{port}"
    return scheme, netloc, path, query


def _url_parts(url: str) -> tuple[str, str, str, str]:
    """urlsplit's (lower-case scheme, netloc, path, query) of a URL already stripped of what it strips; an
    ASCII ``http(s)://`` one split here, in a third of its time (a link with a query costs ~8 us, urlsplit 3 of
    them); tests/unit/core/test_urls.py holds the two to the same parts."""
    head = url[:8].lower()
    start = 7 if head.startswith("http://") else 8 if head.startswith("https://") else 0
    if start and url.isascii():
        rest = url[start:]
        end = len(rest)
        for delimiter in "/?#":
            at = rest.find(delimiter)
            if 0 <= at < end:
                end = at
        netloc, tail = rest[:end], rest[end:]
        if "[" not in netloc and "]" not in netloc:  # (an IPv6 literal's brackets urlsplit checks)
            tail = tail.partition("#")[0]
            path, _, query = tail.partition("?")
            return head[: start - 3], netloc, path, query
    parts = urlsplit(url)
    return parts.scheme.lower(), parts.netloc, parts.path, parts.query


def canonicalize(url: str, tracking_params: Iterable[str] = ()) -> str | None:
    """The canonical form of an absolute http(s) URL, or None if it is not one we could ever fetch.

    Never raises. ``tracking_params`` are parameter names (``fnmatch`` patterns, e.g. ``utm_*``) to drop.
    """
    return link_forms(url, tracking_params, spelling=False)[0]


def link_forms(url: str, tracking_params: Iterable[str] = (), spelling: bool = True) -> tuple[str | None, str | None]:
    """(canonical form, request form when it differs) of a link, from one parse: what a page's links need.

    The request form is computed only when ``spelling`` and the link is not already written canonically.
    """
    if _already_canonical(url):
        return url, None
    return _parsed_link_forms(url, tracking_params, spelling)


def _parsed_link_forms(url: str, tracking_params: Iterable[str], spelling: bool) -> tuple[str | None, str | None]:
    try:
        split = _split(url)
        if split is None:
            return None, None
        scheme, netloc, raw_path, raw_query = split
        path = _normalise_escapes(raw_path or "/", _PATH_ESCAPES)
        if not path.startswith("/"):
            path = "/" + path
        path = _remove_dot_segments(path)
        query = _canonical_query(raw_query, tracking_params)
        canonical = f"{scheme}://{netloc}{path}{'?' + query if query else ''}"
        if not spelling or url == canonical:
            return canonical, None
        requested = _request_from(scheme, netloc, raw_path, raw_query)
    except (ValueError, UnicodeError):
        return None, None
    return canonical, requested if requested != canonical else None


# A link written as its own canonical form -- most of them: lower-case http(s) scheme and host, a path of characters
# that stay as they are, no escape, dot segment, query or fragment -- needs no parse. Checking that costs a tenth
# of parsing it (~0.5 against ~5.5 us); tests/unit/core/test_urls.py holds it to what the parse gives.
_PLAIN_LINK = re.compile(r"(https?)://([a-z0-9_.-]+)(?::([1-9][0-9]{0,4}))?(/[A-Za-z0-9\-._~!$&'()*+,;=:@/]*)")


def _already_canonical(url: str) -> bool:
    if len(url) > 4 * MAX_URL_LENGTH:
        return False
    match = _PLAIN_LINK.fullmatch(url)
    if match is None:
        return False
    scheme, host, port, path = match.groups()
    if "/." in path or _canonical_host(host) != host:
        return False
    return port is None or (int(port) < 65536 and int(port) != DEFAULT_PORTS[scheme])


def request_form(url: str) -> str | None:
    """The URL as it will be requested: spelt as written, normalised only as RFC 3986 section 6.2.2 allows
    (scheme and host case, percent-encoding case, dot segments, default port), with what cannot stand on a
    request line percent-encoded (UTF-8) as browsers do; no fragment, no credentials. None: not fetchable.

    The query keeps its order, its tracking parameters and its escapes: a server may read ``?a=2&a=1``
    differently from ``?a=1&a=2``, and robots.txt rules are written against what is requested.
    """
    try:
        split = _split(url)
        return None if split is None else _request_from(*split)
    except (ValueError, UnicodeError):
        return None


def _request_from(scheme: str, netloc: str, raw_path: str, raw_query: str) -> str:
    path = _REQUEST_PATH_ESCAPES.sub(_request_escape, raw_path or "/")
    if not path.startswith("/"):
        path = "/" + path
    path = _remove_dot_segments(path)
    query = _REQUEST_QUERY_ESCAPES.sub(_request_escape, raw_query)
    return f"{scheme}://{netloc}{path}{'?' + query if query else ''}"


def _request_escape(match: re.Match[str]) -> str:
    text = match.group()
    if len(text) == 3 and text[0] == "%":
        return text.upper()  # an escape stays as written, its hex digits upper-cased
    return _percent_encoded(text)


_REQUEST_PATH_ESCAPES = _escape_pattern(_PATH_SAFE)
# In a request's query, '&', '=' and '+' are the server's to read: they stay as written.
_REQUEST_QUERY_ESCAPES = _escape_pattern(_QUERY_SAFE | frozenset("&="))


def _canonical_query(query: str, tracking_params: Iterable[str]) -> str:
    if not query:
        return ""
    tracking = tuple(tracking_params)
    kept: list[tuple[str, str]] = []
    for pair in query.split("&"):
        if not pair:
            continue
        name, eq, value = pair.partition("=")
        name = _normalise_escapes(name, _QUERY_ESCAPES)
        if tracking and _is_tracking(name, tracking):
            continue
        kept.append((name, eq + _normalise_escapes(value, _QUERY_ESCAPES)))
    kept.sort(key=_pair_name)  # (stable: a repeated key keeps its values' order, which a server may read)
    return "&".join(name + rest for name, rest in kept)


def _pair_name(pair: tuple[str, str]) -> str:
    return pair[0]


def fingerprint(canonical_url: str) -> int:
    """A 64-bit fingerprint of a canonical URL (blake2b): fixed width, stable across processes and runs.

    At 64 bits the chance of any collision among 100 million URLs is about 3e-4.
    """
    return int.from_bytes(hashlib.blake2b(canonical_url.encode("utf-8"), digest_size=8).digest(), "big")


def host_key(canonical_url: str) -> str:
    """The politeness key of a canonical URL: its netloc (host, and port if not the default)."""
    return canonical_url.split("/", 3)[2]


def origin(canonical_url: str) -> str:
    """scheme://netloc of a canonical URL: where its robots.txt lives."""
    scheme, _, rest = canonical_url.partition("://")
    return f"{scheme}://{rest.split('/', 1)[0]}"


def split_netloc(netloc: str) -> tuple[str, int | None]:
    """(host without IPv6 brackets, port or None) of a canonical netloc."""
    if netloc.startswith("["):
        end = netloc.index("]")
        port = netloc[end + 2 :]
        return netloc[1:end], int(port) if port else None
    host, _, port = netloc.partition(":")
    return host, int(port) if port else None


def hostname(netloc: str) -> str:
    """The host part of a netloc, without port or IPv6 brackets."""
    return split_netloc(netloc)[0]


def path_of(canonical_url: str) -> str:
    """Path and query of a canonical URL (what goes on the request line)."""
    rest = canonical_url.split("/", 3)
    return "/" + rest[3] if len(rest) > 3 else "/"
