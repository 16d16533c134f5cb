"""What a fetch worker stores of the pages it fetched: their WARC records and item lines, in buffer files of the
current checkpoint epoch on its node (adapters/warc.py, adapters/items.py), and the pages held until the payload
registry says whether their payload was captured before (a revisit record then).

The fetcher (adapters/fetcher.py) hands over each finished exchange (``keep``); the fetch task asks for the held
pages' claims and answers them (``held_claims``, ``write_held``).
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from raycrawl.adapters.exchange import Exchange
from raycrawl.adapters.extraction import Extraction
from raycrawl.adapters.fetch_errors import fault_result
from raycrawl.adapters.items import ItemSink
from raycrawl.adapters.warc import HttpStatus, WarcSink, buffer_path, new_record_id, warc_date
from raycrawl.core.captures import Capture, Claim, payload_key
from raycrawl.core.fetch_settings import FetchSettings
from raycrawl.core.items import ItemLine
from raycrawl.core.pages import iso_utc
from raycrawl.core.records import WarcSpan
from raycrawl.core.revisits import Revisit, duplicate_revisit, recrawl_outcome, revisit_for


class PageOutput:
    def __init__(self, settings: FetchSettings, extraction: Extraction | None) -> None:
        self.settings = settings
        self._extraction = extraction
        self._warc: WarcSink | None = None
        self._items: ItemSink | None = None  # the item lines of this epoch (with an extractor)
        self._held: list[tuple[Exchange, Claim]] = []  # pages whose WARC waits for the payload registry
        self._hold = False

    def start(self, epoch: int, node: str, hold_pages: bool) -> None:
        """A batch of this epoch begins (``hold_pages``: pages with a payload wait for the registry)."""
        self._use_epoch(epoch, node)
        self._hold = hold_pages
        self._held = []  # (a task that failed may have left some: their leases went back to their shards)

    def _use_epoch(self, epoch: int, node: str) -> None:
        """WARC records go to a buffer file of the current checkpoint epoch (see adapters/warc.py), in a directory of
        the node's own: nodes that share a disk (several on one machine, a shared temp directory) never clean up
        each other's buffers at a cut."""
        s = self.settings
        # (a cut that failed may have taken this epoch's file already: then a new one is needed)
        if s.warc_buffer is not None and not (self._warc and self._warc.epoch == epoch and self._warc.path.exists()):
            if self._warc is not None:
                self._warc.close()
            self._warc = WarcSink(os.path.join(buffer_path(s.warc_buffer), node), epoch, dict(s.warc_info))
        if s.item_buffer is not None and not (self._items and self._items.epoch == epoch and self._items.path.exists()):
            if self._items is not None:
                self._items.close()
            self._items = ItemSink(os.path.join(buffer_path(s.item_buffer), node), epoch)

    def keep(self, ex: Exchange, too_large: bool) -> None:
        """The finished exchange's WARC records (or, for a page with a payload, its claim held for the registry)
        and its item's line."""
        r = ex.result
        assert r.status is not None and r.sha256 is not None  # (set when the exchange was finished)
        if self._warc is not None and (not too_large or self.settings.keep_truncated):
            known = r.lease.entry.known
            revisit = revisit_for(recrawl_outcome(r.status, known, r.sha256), known, r.lease.request_url, ex.body)
            if revisit is None and self._hold and r.lease.kind == "page" and 200 <= r.status < 300 and ex.body:
                # (a whole payload: truncated ones are written whole above, as they were read)
                capture = Capture(r.lease.request_url, new_record_id(), warc_date(r.responded_at))
                self._held.append((ex, (payload_key(r.sha256), capture)))
                return
            self._write(ex, too_large, revisit)
        self._write_item(ex)

    def _write_item(self, ex: Exchange) -> None:
        """The page's verdict on its result, and its item's line in the buffer (after its WARC: the line names
        the capture's record)."""
        judgement, r = ex.judgement, ex.result
        if judgement is None or self._extraction is None:
            return
        r.verdict, r.verdict_reason, r.verdict_rule = judgement.verdict, judgement.reason, judgement.rule
        if self._items is None or (judgement.item is None and judgement.verdict != "quarantined"):
            return
        line = ItemLine(
            r.lease.url, iso_utc(r.responded_at or r.sent_at), r.warc_id, self._extraction.name,
            self._extraction.settings.schema_version, judgement.verdict, judgement.reason, judgement.item,
        )  # fmt: skip
        start, end = self._items.write(line)
        r.item = WarcSpan("", self._items.path.name, 0, start, end)

    def flush(self) -> None:
        if self._warc is not None:
            self._warc.flush()
        if self._items is not None:
            self._items.flush()

    def close(self) -> None:
        if self._warc is not None:
            self._warc.close()
        if self._items is not None:
            self._items.close()

    def _write(self, ex: Exchange, truncated: bool, revisit: Revisit | None, record_id: str | None = None) -> None:
        assert self._warc is not None and ex.result.status is not None
        r = ex.result
        status = HttpStatus(r.status, _reason_bytes(ex.reason), ex.raw_headers)  # type: ignore[arg-type]
        stored = self._warc.write(
            r.lease.request_url, ex.request_headers, status, ex.body, truncated, ex.ip, r.responded_at, revisit,
            record_id, ex.proxy,
        )  # fmt: skip
        end = stored.end
        render = ex.render
        if render is not None and render.html is not None:  # (the rendered DOM: a conversion of that response)
            end = self._warc.write_conversion(
                r.lease.request_url, render.html.encode("utf-8"), "text/html; charset=utf-8", stored.record_id
            )
            if render.screenshot is not None:
                end = self._warc.write_conversion(r.lease.request_url, render.screenshot, "image/png", stored.record_id)
        r.warc = WarcSpan("", self._warc.path.name, self._warc.head, stored.start, end)
        r.warc_id, r.warc_date = stored.record_id, stored.date

    # --- pages held for the payload registry (on the calling thread) -------------------------------------

    def held_claims(self) -> list[Claim]:
        """The held pages' claims to be their payload's first capture, in the order ``write_held`` takes answers."""
        return [claim for _, claim in self._held]

    def write_held(self, firsts: Sequence[Capture | None]) -> None:
        """Write the held pages' WARC: whole when ``firsts`` says its payload is new (None), else a revisit record
        naming the payload's first capture. A write that fails is its URL's error, as in ``_finished``."""
        held, self._held = self._held, []
        for (ex, (_, capture)), first in zip(held, firsts, strict=True):
            r = ex.result
            try:
                revisit = duplicate_revisit(first, ex.body) if first is not None else None
                self._write(ex, False, revisit, capture.record_id)
                if first is not None:
                    r.duplicate_of, r.warc_id, r.warc_date = first.url, first.record_id, first.date
                self._write_item(ex)
            except Exception as exc:
                fault_result(r, exc)
                r.warc = None
        self.flush()


def _reason_bytes(reason: str) -> bytes:
    """The reason phrase's bytes as sent (aiohttp decoded them with surrogate escapes)."""
    try:
        return reason.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return reason.encode("utf-8", "replace")
