"""A host's robots.txt through a crawl: asked for before its first page and again when its rules expire (or, after a
failure, when they may be asked again), applied to every URL queued for it, and judged when it answers.

RFC 9309: rules that could not be fetched ("unreachable") are not applied -- robots.txt is asked for again first,
with backoff, and a host whose robots.txt stays unreachable (or fails for good) is closed.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from raycrawl.core.frontier_settings import FrontierSettings
from raycrawl.core.politeness import backoff
from raycrawl.core.records import Ack, Lease, Outcome, UrlEntry
from raycrawl.core.robots import RobotsRules, rules_from_fetch

DENIED = "disallowed by robots.txt"  # the detail of a robots_denied record


def denies(robots: RobotsRules | None, entry: UrlEntry) -> bool:
    """Parsed rules forbid the URL (unreachable rules forbid nothing: they are asked for again first)."""
    return robots is not None and robots.verdict == "parsed" and not robots.allows(entry.request_url)


def robots_lease(
    lease_id: int, shard: int, origin: str, not_before: float, ttl: float, robots: RobotsRules | None
) -> Lease:
    """The lease of a host's robots.txt, for ``not_before`` -- or, when its rules (unreachable ones: their retry
    time) last longer, for when they expire."""
    if robots is not None and robots.expires_at > not_before:
        not_before = robots.expires_at
    return Lease(lease_id, shard, "robots", not_before, not_before + ttl, UrlEntry(origin + "/robots.txt", 0))


@dataclass(frozen=True, slots=True)
class RobotsJudgement:
    """What one robots.txt answer means for its host: the rules to keep (parsed, or unreachable until a retry), or
    a verdict that closes the host; the counter to count it under."""

    rules: RobotsRules | None
    closed: tuple[Outcome, str] | None
    counter: str | None
    failures: int  # consecutive failures after it


def judge(ack: Ack, failures: int, s: FrontierSettings, now: float, rng: random.Random) -> RobotsJudgement:
    answered = ack.ended_at or ack.responded_at or now
    failed = ack.error is not None  # (a transport failure, a cut body, a failed hop: RFC 9309 "unreachable")
    rules = rules_from_fetch(ack.status, ack.body, s.ua_token, now, s.robots_ttl, failed, ack.truncated)
    if rules.unreachable:
        failures += 1
        permanent = ack.error is not None and not ack.transient  # e.g. a blocked address: no retry helps
        why = ack.error or f"status {ack.status}"  # (a transport failure says more than the status it cut)
        if permanent or failures >= s.max_attempts:
            return RobotsJudgement(None, ("error", f"robots.txt unreachable ({why})"), "robots_given_up", failures)
        retry_at = answered + backoff(s.policy, failures, rng)
        if ack.retry_at is not None:
            retry_at = min(max(ack.retry_at, answered), answered + s.policy.max_retry_after)
        return RobotsJudgement(
            RobotsRules("unreachable", ack.status, fetched_at=now, expires_at=retry_at), None, None, failures
        )
    if rules.crawl_delay is not None and rules.crawl_delay > s.policy.max_crawl_delay:
        if s.crawl_delay_policy == "skip":
            cap = s.policy.max_crawl_delay
            why = f"Crawl-delay {rules.crawl_delay:g} s exceeds the {cap:g} s cap"
            return RobotsJudgement(rules, ("robots_denied", why), "crawl_delay_over_cap", 0)
        return RobotsJudgement(rules, None, "crawl_delay_over_cap", 0)
    return RobotsJudgement(rules, None, None, 0)
