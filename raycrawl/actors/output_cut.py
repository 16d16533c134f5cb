"""The output at a checkpoint cut: buffered records and WARC become parts in the storage, by the processes that
hold them, before the checkpoint that lists them commits.

- Page records: each shard's buffer becomes ``pages/pages-e<epoch>-shard<i>.jsonl``, written by the shard.
- WARC: the shards hand over the spans of the results that became records; one ``store_node_parts`` task on each
  node that fetched since the last cut copies those spans (core/parts.py) from its buffer files into ``warc/``,
  then deletes those buffers. A node's disk
  therefore holds at most what it fetched since the last cut (and a cut is forced when a buffer passes
  ``max_part_bytes``).
- Items (with an extractor): the lines of the recorded results in the node's item buffers, kept by the same spans,
  become Parquet parts in ``items/`` and ``rejected/`` (adapters/items.py), typed by the crawl's item columns as
  known so far (which each node is given, and answers with the ones it added).
- A node that is gone takes its buffers with it: the cut cannot be whole, so the crawl rolls back to the last
  checkpoint (``OutputLost``) and fetches that interval again -- what a lost node costs is what was done since
  the last cut. A store that cannot be written keeps every buffer and says why; the next cut tries again.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import ray
from ray.exceptions import RayError
from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

from raycrawl.adapters.items import (
    BUFFER_SUFFIX,
    is_item_buffer,
    item_parts,
    parquet_bytes,
    part_names,
    read_table,
    stored_columns,
)
from raycrawl.adapters.output import (
    ITEMS_DIR,
    PAGES_DIR,
    REJECTED_DIR,
    WARC_DIR,
    in_period,
    pages_part,
    remove_uncommitted,
    unwrap_doubled_parts,
    write_committed,
)
from raycrawl.adapters.storage import Storage, StorageError, open_storage
from raycrawl.adapters.warc import buffer_path, epoch_of
from raycrawl.core.dead_letters import DeadLetters, take_dead_letters
from raycrawl.core.items import ColumnType, ItemSchema
from raycrawl.core.parts import Ranges, WarcLedger
from raycrawl.core.shard_work import ShardOutput

CUT_TIMEOUT = 600.0  # a node that has not stored its parts by then is taken as lost


class OutputLost(Exception):
    """Buffered output of this interval is gone with a node: the crawl rolls back to its last checkpoint."""


class OutputUnwritable(Exception):
    """The storage refused parts of this cut; buffers are kept for the next one. The message says why."""


@dataclass(slots=True)
class NodeStored:
    """What a node's ``store_node_parts`` did."""

    parts: list[str] = field(default_factory=list)
    problem: str | None = None  # why not all could be stored (then no buffer was deleted)
    columns: dict[str, ColumnType] = field(default_factory=dict)  # the item columns, as this node left them
    type_conflicts: int = 0  # accepted items whose columns' types did not fit (stored among the rejected)


@ray.remote(num_cpus=0, max_retries=0)
def store_node_parts(
    location: str,
    filesystem: Any,
    buffer: str,
    node: str,
    epoch: int,
    plan: dict[str, Ranges],
    shared_marker: str | None,
    period: str | None = None,
    columns: dict[str, ColumnType] | None = None,
) -> NodeStored:
    """On ``node``: copy the kept spans of its WARC buffer files into ``warc/`` and make its item buffers' kept lines
    Parquet parts, then delete its buffers of ``epoch`` and before (its own only: nodes on one disk keep theirs
    apart)."""
    storage = open_storage(location, filesystem)
    done = NodeStored(columns=dict(columns or {}))
    if shared_marker is not None and not storage.exists(shared_marker):
        node = ray.get_runtime_context().get_node_id()[:12]
        done.problem = (
            f"out: {storage.root} is not on a filesystem node {node} shares with the driver; "
            "give a URI (s3://bucket/prefix, gs://..., abfs://...) or a directory every node mounts"
        )
        return done
    directory = os.path.join(buffer_path(buffer), node)
    try:
        for file, ranges in plan.items():
            if is_item_buffer(file):
                _store_items(storage, os.path.join(directory, file), ranges, period, done)
                continue
            name = f"{in_period(WARC_DIR, period)}/{file}"
            storage.put_file(name, os.path.join(directory, file), ranges)
            done.parts.append(name)
    except (StorageError, OSError) as exc:
        done.problem = str(exc)
        return done
    for pattern in ("*.warc.gz", "*" + BUFFER_SUFFIX):  # what was not kept belongs to no record
        for path in Path(directory).glob(pattern):
            file_epoch = epoch_of(path)
            if file_epoch is not None and file_epoch <= epoch:
                path.unlink(missing_ok=True)
    return done


def _store_items(storage: Storage, path: str, ranges: Ranges, period: str | None, done: NodeStored) -> None:
    with open(path, "rb") as source:
        lines: list[bytes] = []
        for start, end in ranges:
            source.seek(start)
            lines.extend(source.read(end - start).splitlines())
    made = item_parts(lines, done.columns)
    done.columns, done.type_conflicts = made.columns, done.type_conflicts + made.conflicts
    items, rejected = part_names(os.path.basename(path), lambda d: in_period(d, period))
    for name, table in ((items, made.accepted), (rejected, made.rejected)):
        if table is not None:
            storage.put(name, parquet_bytes(table))
            done.parts.append(name)


# What a shard hands over at a cut: its page part (or None), why it could not store it, and its WARC of the interval.
ShardCut = tuple[str | None, str | None, ShardOutput]


class OutputParts:
    """The coordinator's side: the WARC ledger of what is not stored yet, and the parts the next checkpoint lists."""

    def __init__(self, location: str, filesystem: Any, buffer: str | None, run: str) -> None:
        self.location = location
        self.filesystem = filesystem
        self.storage = open_storage(location, filesystem)
        self.buffer = buffer  # None: no WARC, no items
        self.items = ItemSchema()  # the crawl's item columns (adapters/items.py), as stored so far
        self.type_conflicts = 0  # accepted items stored among the rejected for their types, since last taken
        # A local output directory gets a file only this run writes: a node that cannot see it does not share
        # this node's disk, and refuses to store its WARC parts there (store_node_parts).
        self.shared_marker: str | None = None
        if self.storage.local:
            self.shared_marker = f".raycrawl-run-{run}"
            self.storage.put(self.shared_marker, run.encode())
        self.ledger = WarcLedger()
        self.parts: list[str] = []  # stored, and consistent with the crawl's state: the next checkpoint lists them
        self._superseded: list[str] = []  # parts the next checkpoint no longer lists: deleted once it commits

    def resume(self, parts: list[str]) -> tuple[int, int]:
        """Continue the output of a checkpoint that lists ``parts``: parts it does not list are deleted, and WARC
        parts an older raycrawl gzipped twice are put right. Returns how many of each."""
        self.parts = list(parts)
        removed = remove_uncommitted(self.storage, self.parts)
        for part in self.parts:
            if part.startswith(ITEMS_DIR + "/"):
                self.items.merge(stored_columns(self.storage, part))
        fixed = unwrap_doubled_parts(self.storage, [p for p in self.parts if p.startswith(WARC_DIR + "/")])
        return len(removed), len(fixed)

    def cut(self, epoch: int, shard_cuts: list[ShardCut], period: str | None = None) -> list[str]:
        """Store this interval's output as parts of ``epoch`` (in ``period``'s directories, with --rollover); the
        parts the checkpoint of this cut lists. The
        shards have stored their page parts (``shard_cuts``); their WARC spans join what earlier cuts could not
        store, and each node copies its own."""
        problems: list[str] = []
        for part, problem, output in shard_cuts:
            if part is not None:
                self.parts.append(part)
            if problem is not None:
                problems.append(problem)
            self.ledger.keep(output.spans)
            for node in output.nodes:
                self.ledger.saw(node)
        nodes = self.ledger.nodes() if self.buffer is not None else []
        refs = [
            store_node_parts.options(scheduling_strategy=NodeAffinitySchedulingStrategy(node, soft=False)).remote(
                self.location,
                self.filesystem,
                self.buffer,
                node,
                epoch,
                self.ledger.plan(node),
                self.shared_marker,
                period,
                self.items.columns,
            )
            for node in nodes
        ]
        ready, _ = ray.wait(refs, num_returns=len(refs), timeout=CUT_TIMEOUT) if refs else ([], [])
        lost: list[str] = []
        for node, ref in zip(nodes, refs, strict=True):
            if ref not in ready:
                lost.append(f"node {node[:12]} did not answer in {CUT_TIMEOUT:.0f} s")
                continue
            try:
                stored: NodeStored = ray.get(ref)
            except RayError as exc:  # the node (or its raylet) is gone, and its buffers with it
                lost.append(f"node {node[:12]}: {type(exc).__name__}")
                continue
            self.parts.extend(stored.parts)
            # (two nodes that gave one new column two types in one cut: the first stays the crawl's; readers
            # unify the parts' schemas, results.read_items)
            self.items.merge(stored.columns)
            self.type_conflicts += stored.type_conflicts
            if stored.problem is None:
                self.ledger.forget(node)
            else:
                problems.append(stored.problem)
        if lost:
            raise OutputLost("; ".join(lost))
        if problems:
            raise OutputUnwritable(problems[0])
        return list(dict.fromkeys(self.parts))

    def committed(self, checkpoint_id: int) -> str | None:
        """The checkpoint listing ``self.parts`` is current: say so to readers. A failure is returned (the output
        is safe; only readers lag until the next cut)."""
        try:
            write_committed(self.storage, checkpoint_id, self.parts)
        except StorageError as exc:
            return str(exc)
        superseded, self._superseded = self._superseded, []
        with contextlib.suppress(StorageError):  # (left behind, a resume deletes them: no checkpoint lists them)
            self.storage.delete(superseded)
        return None

    def take_dead_letters(self, epoch: int, outcomes: Collection[str], verdicts: Collection[str] = ()) -> DeadLetters:
        """The URLs whose committed records ended in ``outcomes`` (or have a verdict in ``verdicts``), taken out of
        the output: each page part that has any is replaced by a part of ``epoch`` without them (the next
        checkpoint lists it instead), and so is each rejected-items part with any of theirs."""
        taken = DeadLetters()
        for part in [p for p in self.parts if p.startswith(PAGES_DIR + "/")]:
            data = self.storage.read(part)
            if data is None:
                raise StorageError(f"{self.storage.show(part)} is listed in the checkpoint but missing")
            found = take_dead_letters(data, outcomes, verdicts)
            if not found.entries:
                continue
            rest = [p for p in self.parts if p != part]
            if found.kept:
                name = pages_part(epoch, f"retried{len(self._superseded):04d}")
                self.storage.put(name, b"".join(found.kept))
                rest.append(name)
            self.parts = rest
            self._superseded.append(part)
            taken.entries += found.entries
            taken.outcomes += found.outcomes
            taken.verdicts += found.verdicts
        if verdicts and taken.entries:
            self._take_rejected(epoch, {entry.url for entry in taken.entries})
        return taken

    def _take_rejected(self, epoch: int, urls: set[str]) -> None:
        """The rejected-items rows of ``urls`` out of the output (their pages are judged again)."""
        for part in [p for p in self.parts if p.startswith(REJECTED_DIR + "/")]:
            table = read_table(self.storage, part)
            keep = pc.invert(pc.is_in(table.column("url"), value_set=pa.array(sorted(urls))))
            rest = table.filter(keep)
            if rest.num_rows == table.num_rows:
                continue
            self.parts = [p for p in self.parts if p != part]
            if rest.num_rows:
                name = f"{REJECTED_DIR}/retried-e{epoch:06d}-{len(self._superseded):04d}.parquet"
                self.storage.put(name, parquet_bytes(rest))
                self.parts.append(name)
            self._superseded.append(part)

    def roll_back(self, parts: list[str]) -> None:
        """Back to a checkpoint that lists ``parts``: this interval's buffers are dropped, its parts deleted."""
        stray = set(self.parts) - set(parts)
        self._superseded = []
        self.ledger.clear()
        self.parts = list(parts)
        with contextlib.suppress(StorageError):
            self.storage.delete(sorted(stray))

    def close(self) -> None:
        if self.shared_marker is not None:
            with contextlib.suppress(StorageError):
                self.storage.delete([self.shared_marker])
