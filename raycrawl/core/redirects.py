"""Redirect chains: each hop goes back through the frontier (scope, robots, address guard, dedup), carrying
the URLs that led to it, so loops and over-long chains end as an ``error`` record naming the chain."""

from __future__ import annotations

MAX_CHAIN_SHOWN = 12  # URLs of a chain written into an error message


def redirect_problem(chain: tuple[str, ...], url: str, target: str, max_redirects: int) -> tuple[str, str] | None:
    """(rule, message) saying why the redirect from ``url`` (reached through ``chain``) to ``target`` is not
    followed, or None when it is.

    ``chain`` holds the URLs that redirected to ``url``, first first. A chain of n redirects costs n + 1
    requests, so ``max_redirects`` = 10 bounds a redirect trap to 11 requests.
    """
    hops = (*chain, url)
    if target in hops:
        return "redirect_loop", "redirect loop: " + _show((*hops, target))
    if len(hops) > max_redirects:
        return "too_many_redirects", f"more than {max_redirects} redirects: " + _show((*hops, target))
    return None


def _show(urls: tuple[str, ...]) -> str:
    if len(urls) > MAX_CHAIN_SHOWN:
        urls = (*urls[: MAX_CHAIN_SHOWN // 2], "...", *urls[-MAX_CHAIN_SHOWN // 2 :])
    return " -> ".join(urls)
