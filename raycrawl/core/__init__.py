"""Pure crawl logic: no Ray, no network, no Redis. Everything here is unit-tested with an injected clock."""
