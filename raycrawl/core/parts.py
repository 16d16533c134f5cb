"""Which buffered WARC bytes become output at the next checkpoint cut (pure: no I/O, no Ray).

Fetch workers append WARC records to buffer files on their own node's disk. Not every record there belongs in
the output: a result its shard ignored (a lease that expired, an attempt that will be retried) and
whatever a worker wrote after its last reported result before it died have no page record. The ledger keeps
the spans of the results that did become records; at the cut each node copies exactly those spans (after the
file's warcinfo record) into the store, so every WARC response stored has its record, and one only.
"""

from __future__ import annotations

from collections.abc import Iterable

from raycrawl.core.records import WarcSpan

Ranges = list[tuple[int, int]]


class WarcLedger:
    def __init__(self) -> None:
        self._files: dict[str, dict[str, tuple[int, Ranges]]] = {}  # node -> file -> (head, kept spans)
        self._nodes: set[str] = set()
        self.largest = 0  # the largest buffer file seen so far (its end), against the part size bound

    def saw(self, node: str) -> None:
        """A node ran fetches this epoch: its buffers are cleaned at the cut even if nothing there is kept."""
        if node:
            self._nodes.add(node)

    def keep(self, spans: Iterable[WarcSpan]) -> None:
        for span in spans:
            self.saw(span.node)
            _, ranges = self._files.setdefault(span.node, {}).setdefault(span.file, (span.head, []))
            ranges.append((span.start, span.end))
            self.largest = max(self.largest, span.end)

    def nodes(self) -> list[str]:
        return sorted(self._nodes)

    def plan(self, node: str) -> dict[str, Ranges]:
        """For each buffer file on ``node`` with something kept: the byte ranges its part is made of, in file
        order, starting with the warcinfo record; adjacent ranges are joined (one read instead of many)."""
        out: dict[str, Ranges] = {}
        for file, (head, ranges) in self._files.get(node, {}).items():
            merged: Ranges = [(0, head)]
            for start, end in sorted(set(ranges)):
                if start < merged[-1][1]:
                    raise ValueError(f"{file}: overlapping WARC spans at {start}")
                if start == merged[-1][1]:
                    merged[-1] = (merged[-1][0], end)
                else:
                    merged.append((start, end))
            out[file] = merged
        return out

    def forget(self, node: str) -> None:
        """``node``'s kept spans are stored."""
        self._files.pop(node, None)
        self._nodes.discard(node)
        ends = [end for files in self._files.values() for _, ranges in files.values() for _, end in ranges]
        self.largest = max(ends, default=0)

    def clear(self) -> None:
        self._files.clear()
        self._nodes.clear()
        self.largest = 0
