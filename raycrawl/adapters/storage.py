"""Where a crawl's output lives: a local directory, or a URI (``s3://bucket/prefix``, ``gs://``, ``abfs://``,
``file://``) resolved by ``pyarrow.fs`` as Ray Data and Ray Train resolve theirs, query options included
(``s3://bucket/crawl?endpoint_override=host:9000&scheme=http&region=eu-west-1``); or, from Python, a
``pyarrow.fs`` or fsspec filesystem object with a path in it (as Ray Data's ``filesystem=``).

Every process that writes output resolves the location itself (``open_storage``): credentials come from its
own environment or instance role, never shipped, logged or written. ``where`` is the location as shown to a
person: secrets in the URI's query or user part are replaced by ``***``.

Writes are whole objects: ``put`` replaces a file atomically (a temporary file renamed, fsync'd, on a local
disk; one PUT, which is atomic, on an object store), so a reader never sees half a file.

Bytes are stored as given, on every filesystem: ``pyarrow.fs`` streams default to ``compression="detect"``, which
gzips again any name ending in ``.gz`` (a ``.warc.gz`` became gzip inside gzip, unreadable by archive tools) and
gunzips it again on the way back. Files an older raycrawl wrote that way are read through ``unwrap_doubled_gzip``.
"""

from __future__ import annotations

import contextlib
import functools
import gzip
import os
import re
import uuid
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import pyarrow.fs as pafs

COPY_CHUNK = 8 << 20  # bytes read and written at a time when a file is put from a local one
_SECRET_KEY = re.compile(r"key|secret|token|password|credential|sas|signature", re.IGNORECASE)
GZIP_MAGIC = b"\x1f\x8b"
DOUBLED_PROBE = 64 << 10  # bytes read of a file's head to tell whether it is gzip inside gzip


class StorageError(Exception):
    """The output location cannot be resolved, reached or written; the message says which and why."""


def is_uri(location: str) -> bool:
    return bool(re.match(r"^[A-Za-z][A-Za-z0-9+.-]*://", location))


def redact_location(location: str) -> str:
    """The location without secrets: query values whose name looks like a credential, and a URI's password."""
    if not is_uri(location):
        return location
    parts = urlsplit(location)
    netloc = parts.netloc
    if "@" in netloc:
        user, _, host = netloc.rpartition("@")
        netloc = f"{user.split(':', 1)[0]}:***@{host}" if ":" in user else f"***@{host}"
    query = "&".join(f"{name}={'***' if _SECRET_KEY.search(name) else value}" for name, value in parse_qsl(parts.query))
    return f"{parts.scheme}://{netloc}{parts.path}" + (f"?{query}" if query else "")


@dataclass(frozen=True)
class Storage:
    """A resolved output location: a filesystem and the crawl's root directory in it."""

    fs: pafs.FileSystem
    root: str  # in the filesystem's own terms (a bucket and prefix on S3, an absolute path locally)
    where: str  # for messages: the location as given, secrets redacted

    @property
    def local(self) -> bool:
        return isinstance(self.fs, pafs.LocalFileSystem)

    def path(self, name: str) -> str:
        return f"{self.root.rstrip('/')}/{name}" if name else self.root

    def show(self, name: str = "") -> str:
        """A file's location for a person: the URI (redacted) with the name under it."""
        base = self.where.split("?", 1)[0].rstrip("/")
        return f"{base}/{name}" if name else base

    # --- reading ------------------------------------------------------------------------------------

    def read(self, name: str) -> bytes | None:
        """A file's bytes as stored (a ``.gz`` doubled by an older raycrawl unwrapped once), or None when there is
        no such file."""
        data = self.read_raw(name)
        if data is not None and name.endswith(".gz"):
            return unwrap_doubled_gzip(data)
        return data

    def read_raw(self, name: str, limit: int | None = None) -> bytes | None:
        """A file's bytes exactly as stored (the first ``limit`` of them when given), or None when it is missing."""
        with self._missing_ok("read", name), self.fs.open_input_stream(self.path(name), compression=None) as f:
            data: bytes = f.read() if limit is None else f.read(limit)
            return data
        return None

    def list(self, directory: str, recursive: bool = False) -> list[str]:
        """Names of the files in ``directory`` (relative to the root: directly in it, or with ``recursive`` in it
        and below), sorted; [] when it is missing."""
        base = self.path(directory)
        try:
            infos = self.fs.get_file_info(pafs.FileSelector(base, allow_not_found=True, recursive=recursive))
        except OSError as exc:
            raise self._error("list", directory, exc) from None
        prefix = f"{directory.rstrip('/')}/" if directory else ""
        files = [i.path for i in infos if i.type == pafs.FileType.File]
        if not recursive:
            return sorted(prefix + Path(path).name for path in files)
        return sorted(prefix + _below(path, base, directory) for path in files)

    def exists(self, name: str) -> bool:
        try:
            return bool(self.fs.get_file_info(self.path(name)).type != pafs.FileType.NotFound)
        except OSError as exc:
            raise self._error("reach", name, exc) from None

    # --- writing ------------------------------------------------------------------------------------

    def put(self, name: str, data: bytes) -> None:
        """Write ``name`` whole, replacing it atomically."""
        self.put_ranges(name, [data])

    def put_file(self, name: str, source: str, ranges: Iterable[tuple[int, int]] | None = None) -> int:
        """Write ``name`` from a local file: the whole file, or only the byte ``ranges`` ([start, end) pairs, in
        order). Returns the bytes written."""
        spans = list(ranges) if ranges is not None else [(0, os.path.getsize(source))]

        def pieces() -> Iterable[bytes]:
            with open(source, "rb") as f:
                for start, end in spans:
                    f.seek(start)
                    left = end - start
                    while left > 0:
                        chunk = f.read(min(COPY_CHUNK, left))
                        if not chunk:
                            raise StorageError(f"{source} is shorter than expected ({start}-{end})")
                        left -= len(chunk)
                        yield chunk

        return self.put_ranges(name, pieces())

    def put_ranges(self, name: str, pieces: Iterable[bytes]) -> int:
        written = 0
        try:
            if self.local:
                target = Path(self.path(name))
                target.parent.mkdir(parents=True, exist_ok=True)
                tmp = target.with_name(f".{target.name}.{uuid.uuid4().hex[:8]}.tmp")
                try:
                    with tmp.open("wb") as f:
                        for piece in pieces:
                            written += f.write(piece)
                        f.flush()
                        os.fsync(f.fileno())
                    os.replace(tmp, target)
                finally:
                    tmp.unlink(missing_ok=True)
                _fsync_dir(target.parent)
            else:
                with self.fs.open_output_stream(self.path(name), compression=None) as out:
                    for piece in pieces:
                        out.write(piece)
                        written += len(piece)
        except StorageError:
            raise
        except OSError as exc:
            raise self._error("write", name, exc) from None
        return written

    def delete(self, names: Iterable[str]) -> None:
        """Remove files (missing ones are fine)."""
        for name in names:
            with self._missing_ok("delete", name):
                self.fs.delete_file(self.path(name))

    def delete_dir(self, directory: str) -> None:
        with self._missing_ok("delete", directory):
            self.fs.delete_dir(self.path(directory))

    @contextlib.contextmanager
    def _missing_ok(self, verb: str, name: str) -> Iterator[None]:
        """A file that is not there ends the block quietly (each filesystem says so its own way); any other
        failure is a StorageError naming the file."""
        try:
            yield
        except OSError as exc:
            if not _not_found(exc):
                raise self._error(verb, name, exc) from None

    def _error(self, verb: str, name: str, exc: OSError) -> StorageError:
        detail = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        return StorageError(f"cannot {verb} {self.show(name)}: {_redact_text(detail, self.where)}")


def is_doubled_gzip(head: bytes) -> bool:
    """Whether ``head`` (a file's first bytes) is gzip whose content is gzip again, as ``pyarrow.fs`` made of a
    ``.gz`` written with its default ``compression="detect"``. (A WARC member's content starts ``WARC/``.)"""
    if not head.startswith(GZIP_MAGIC):
        return False
    try:
        inner = zlib.decompressobj(wbits=31).decompress(head, len(GZIP_MAGIC))
    except zlib.error:
        return False
    return inner == GZIP_MAGIC


def unwrap_doubled_gzip(data: bytes) -> bytes:
    """``data`` with one gzip layer taken off when it is gzip inside gzip; as it is otherwise."""
    if not is_doubled_gzip(data[:DOUBLED_PROBE]):
        return data
    try:
        return gzip.decompress(data)
    except (OSError, EOFError, zlib.error):  # truncated or damaged outer layer: what was stored, as it is
        return data


def _not_found(exc: OSError) -> bool:
    text = str(exc)
    return (
        isinstance(exc, FileNotFoundError)
        or "NoSuchKey" in text
        or "not found" in text.lower()
        or "No such file" in text
    )


def _redact_text(text: str, where: str) -> str:
    # pyarrow messages name the bucket and key, never the credentials; the query of a URI could hold them
    return text.replace(where, redact_location(where))


def _fsync_dir(directory: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def resolve(location: str, filesystem: Any = None) -> Storage:
    """The storage ``location`` names: a URI, a local path, or a path in ``filesystem`` (pyarrow or fsspec)."""
    if filesystem is not None:
        fs = filesystem if isinstance(filesystem, pafs.FileSystem) else _from_fsspec(filesystem)
        return Storage(fs, location.rstrip("/") or "/", f"{type(filesystem).__name__}:{location}")
    if not is_uri(location):
        root = str(Path(location).expanduser().resolve())
        return Storage(pafs.LocalFileSystem(), root, root)
    try:
        fs, root = pafs.FileSystem.from_uri(location)
    except (OSError, ValueError, TypeError) as exc:
        message = _redact_text(str(exc).splitlines()[0] if str(exc) else type(exc).__name__, location)
        raise StorageError(f"out: cannot use {redact_location(location)}: {message}") from None
    if isinstance(fs, pafs.LocalFileSystem):
        return Storage(fs, root, root)
    return Storage(fs, root.rstrip("/"), redact_location(location))


def _from_fsspec(filesystem: Any) -> pafs.FileSystem:
    if not (hasattr(filesystem, "open") and hasattr(filesystem, "protocol")):
        raise StorageError(
            f"filesystem: expected a pyarrow.fs.FileSystem or an fsspec filesystem, not {type(filesystem).__name__}"
        )
    return pafs.PyFileSystem(pafs.FSSpecHandler(filesystem))


@functools.lru_cache(maxsize=8)
def _cached(location: str) -> Storage:
    return resolve(location)


def open_storage(location: str, filesystem: Any = None) -> Storage:
    """``resolve``, once per process for a URI or path (a filesystem object is used as it is)."""
    return resolve(location, filesystem) if filesystem is not None else _cached(location)


def _below(path: str, base: str, directory: str) -> str:
    """``path``'s part below ``directory`` (a listing may spell the base another way: normalised, no scheme)."""
    if path.startswith(base.rstrip("/") + "/"):
        return path[len(base.rstrip("/")) + 1 :]
    marker = f"/{directory.strip('/')}/"
    return path[path.rindex(marker) + len(marker) :] if marker in path else Path(path).name
