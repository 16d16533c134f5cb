"""The politeness budget per host (core/host_budget.py) kept in Redis, so that crawls on different clusters -- or
processes that are not raycrawl -- share it: one atomic Lua script per batch of asks, one per batch of releases,
as the per-host token buckets in Redis of the design we started from.

Keys, under a prefix (one registry per prefix): ``{prefix}:h:{host}``, a hash of the host's ``last`` (when its
delay counts from) and each crawl's ``d:{crawl}`` (its delay and when it asked) and ``c:{crawl}`` (its concurrency
and when); ``{prefix}:o:{host}``, a sorted set of the reservations out (token -> expiry); ``{prefix}:token``, the
last token. The rules are core/host_budget.py's, to the letter (tests/e2e/test_redis_budget.py runs one scenario on
both).
Times are the callers' (seconds since the epoch): the processes sharing a registry must agree on the time (NTP).
A Redis that is a cluster would need the keys of one batch in one slot: not supported.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import redis

from raycrawl.core.host_budget import ACTIVE_FOR, WAITER_FOR, Ask, Grant, Wait

_RESERVE = """
local prefix, now, horizon, ttl, active = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]),
  tonumber(ARGV[5])
local crawl, waiter = ARGV[6], tonumber(ARGV[7])
local out = {}
for i = 8, #ARGV, 3 do
  local host, delay, conc = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  local hkey, okey = prefix .. ':h:' .. host, prefix .. ':o:' .. host
  local expired = redis.call('ZREMRANGEBYSCORE', okey, '-inf', now)
  redis.call('HSET', hkey, 'd:' .. crawl, delay .. '|' .. now, 'c:' .. crawl, conc .. '|' .. now)
  local fields = redis.call('HGETALL', hkey)
  local strictest, bound, last, holder, others = 0, nil, nil, '', false
  for j = 1, #fields, 2 do
    local name, value = fields[j], fields[j + 1]
    if name == 'last' then
      last = tonumber(value)
    elseif name == 'holder' then
      holder = value
    elseif string.sub(name, 1, 2) == 'w:' then
      if string.sub(name, 3) ~= crawl and tonumber(value) > now - waiter then others = true end
    else
      local bar = string.find(value, '|', 1, true)
      local v, at = tonumber(string.sub(value, 1, bar - 1)), tonumber(string.sub(value, bar + 1))
      if at > now - active then
        if string.sub(name, 1, 2) == 'd:' and v > strictest then strictest = v end
        if string.sub(name, 1, 2) == 'c:' and (bound == nil or v < bound) then bound = v end
      end
    end
  end
  bound = bound or 1
  local inflight = redis.call('ZCARD', okey)
  local at = now
  if last ~= nil and last + strictest > at then at = last + strictest end
  if inflight >= bound or at > now + horizon or (crawl == holder and others) then
    redis.call('HSET', hkey, 'w:' .. crawl, now)
    table.insert(out, {'w', string.format('%.17g', at), tostring(expired)})
  else
    local token = redis.call('INCR', prefix .. ':token')
    redis.call('ZADD', okey, string.format('%.17g', at + ttl), token)
    local waiters = {}
    for j = 1, #fields, 2 do
      if string.sub(fields[j], 1, 2) == 'w:' then table.insert(waiters, fields[j]) end
    end
    if #waiters > 0 then redis.call('HDEL', hkey, unpack(waiters)) end
    redis.call('HSET', hkey, 'last', string.format('%.17g', at), 'holder', crawl)
    table.insert(out, {'g', tostring(token), string.format('%.17g', at), string.format('%.17g', strictest),
      tostring(expired)})
  end
end
return out
"""

_RELEASE = """
local prefix, now = ARGV[1], tonumber(ARGV[2])
for i = 3, #ARGV, 3 do
  local host, token, ended = ARGV[i], ARGV[i + 1], tonumber(ARGV[i + 2])
  if redis.call('ZREM', prefix .. ':o:' .. host, token) == 1 then
    local hkey = prefix .. ':h:' .. host
    local last = tonumber(redis.call('HGET', hkey, 'last') or '-inf')
    local t = math.min(ended, now)
    if t > last then redis.call('HSET', hkey, 'last', string.format('%.17g', t)) end
  end
end
return 1
"""


class RedisHostBudget:
    """``core.host_budget.HostBudget``'s calls, kept in Redis (``crawl`` names the caller in every call)."""

    def __init__(
        self,
        client: redis.Redis[Any],
        prefix: str = "raycrawl:budget",
        ttl: float = 180.0,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self._client = client
        self.prefix = prefix
        self.ttl = ttl
        self._clock = clock
        self._reserve: Any = client.register_script(_RESERVE)
        self._release: Any = client.register_script(_RELEASE)
        self.expired = 0

    def reserve(self, crawl: str, asks: Sequence[Ask], horizon: float = 0.0) -> list[Grant | Wait]:
        if not asks:
            return []
        args: list[str | float | int] = [self.prefix, repr(self._clock()), repr(horizon), repr(self.ttl),
                                         repr(ACTIVE_FOR), crawl, repr(WAITER_FOR)]  # fmt: skip
        for ask in asks:
            args += [ask.host, repr(float(ask.delay)), str(max(1, ask.concurrency))]
        answers: list[Grant | Wait] = []
        for ask, row in zip(asks, self._reserve(args=args), strict=True):
            kind, *values = (v.decode() if isinstance(v, bytes) else str(v) for v in row)
            self.expired += int(values[-1])
            if kind == "g":
                answers.append(Grant(ask.host, int(values[0]), float(values[1]), float(values[2])))
            else:
                answers.append(Wait(ask.host, float(values[0])))
        return answers

    def release(self, crawl: str, done: Sequence[tuple[str, int, float]]) -> None:
        if not done:
            return
        args: list[str | float | int] = [self.prefix, repr(self._clock())]
        for host, token, ended in done:
            args += [host, str(token), repr(float(ended))]
        self._release(args=args)
