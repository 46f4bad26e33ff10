"""The on-disk cache under every source.

Two kinds of entry live here:

* **files**: one upstream file of one package at one ref, or the fact that it does not
  exist there. A released version's files never change, so they are fetched once, ever;
  a mutable ref (``main``) expires after a TTL.
* **blobs**: derived data keyed by a digest (the code index of a file, by content hash).
* **wheels**: released wheels kept whole, so a file a new check reads is a zip read away.

Every entry is written atomically (temp file in the same folder, then rename) and carries
a header with its length and SHA-256, so a truncated or garbage entry (disk full, a killed
process, a hand edit) is detected and dropped instead of being read as upstream source: a
damaged file entry is a :class:`~canary.errors.CacheDamaged` the reader refetches (or,
offline, reports), a damaged blob is simply derived again. A lock per fetch unit
(``filelock``: flock on POSIX, msvcrt on Windows) lets parallel workers share one cache
without fetching the same wheel twice.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

import filelock
import platformdirs

from canary.atomic import write_atomically, writing
from canary.errors import CacheDamaged

_MAGIC = b"canary-cache-v1 "
_HEADER_LIMIT = 4096  # bytes: a header is one short JSON line
ABSENT = "absent"  # the digest of a file that does not exist at a ref (no SHA-256 is 6 letters)


def default_cache_dir() -> Path:
    """``CANARY_CACHE_DIR``, else the platform's user cache folder (``~/.cache/canary`` or
    ``$XDG_CACHE_HOME/canary`` on Linux, ``~/Library/Caches/canary`` on macOS,
    ``%LOCALAPPDATA%\\canary\\Cache`` on Windows)."""
    if configured := os.environ.get("CANARY_CACHE_DIR"):
        return Path(configured).expanduser()
    return Path(platformdirs.user_cache_dir("canary", appauthor=False))


def content_digest(content: bytes | None) -> str:
    """What a file's entry records of it: the SHA-256 of its bytes, or :data:`ABSENT`."""
    return ABSENT if content is None else hashlib.sha256(content).hexdigest()


@dataclass(frozen=True)
class FileKey:
    """One upstream file: ``(index, transformers, 5.5.4, transformers/trainer.py)``."""

    source: str
    package: str
    ref: str
    path: str


@dataclass(frozen=True)
class Entry:
    content: bytes | None  # None: the file does not exist at that ref
    sha256: str | None
    fetched_at: float


class Cache:
    def __init__(self, root: Path) -> None:
        self.root = root

    @property
    def wheel_dir(self) -> Path:
        """Where released wheels are kept whole (see :class:`canary.sources.index.IndexSource`)."""
        return self.root / "wheels"

    # -- files ---------------------------------------------------------------------------

    def read_file(self, key: FileKey, *, max_age: float | None = None) -> Entry | None:
        """The cached entry, or None on a miss or an expired entry.

        A damaged entry is removed and raised as :class:`CacheDamaged` naming its file, so
        the reader can tell "refetch this" from "never had it" (offline, only one is fine).
        """
        path = self._file_path(key)
        try:
            entry = _read_entry(path)
        except _Damaged as exc:
            raise CacheDamaged(
                f"the cache entry {path} ({key.package} {key.ref}: {key.path}) is damaged "
                f"({exc}) and was removed",
                path=str(path),
                cause="damaged cache entries",
            ) from None
        if entry is None:
            return None
        if max_age is not None and time.time() - entry.fetched_at > max_age:
            return None
        return entry

    def file_digest(self, key: FileKey) -> str | None:
        """The SHA-256 of the entry's content as its header records it (:data:`ABSENT`
        for a file that does not exist at that ref), reading the header alone; None where
        there is no entry or its header does not read as one. For a reader that only
        needs to know whether a file is the one it saw before: a body that no longer
        matches its header is caught by the next :meth:`read_file`."""
        try:
            with self._file_path(key).open("rb") as stream:
                header = _parse_header(stream.readline(_HEADER_LIMIT))
        except OSError:
            return None
        if header is None:
            return None
        if header.get("absent") is True:
            return ABSENT
        digest = header.get("sha256")
        return digest if isinstance(digest, str) and len(digest) == 64 else None

    def write_file(self, key: FileKey, content: bytes | None) -> None:
        _write_entry(self._file_path(key), content, self.root)

    def _file_path(self, key: FileKey) -> Path:
        parts = [_safe(key.source), _safe(key.package), _safe(key.ref)]
        parts += [_safe(part) for part in key.path.split("/")]
        return self.root.joinpath("files", *parts[:-1], parts[-1] + ".entry")

    # -- blobs ---------------------------------------------------------------------------

    def read_blob(self, namespace: str, digest: str) -> bytes | None:
        """The blob, or None when it is missing or damaged (it is derived: make it again)."""
        try:
            entry = _read_entry(self._blob_path(namespace, digest))
        except _Damaged:
            return None
        return entry.content if entry else None

    def write_blob(self, namespace: str, digest: str, content: bytes) -> None:
        _write_entry(self._blob_path(namespace, digest), content, self.root)

    def _blob_path(self, namespace: str, digest: str) -> Path:
        return self.root / "blobs" / _safe(namespace) / digest[:2] / f"{_safe(digest)}.entry"

    # -- locks ---------------------------------------------------------------------------

    @contextlib.contextmanager
    def lock(self, name: str) -> Iterator[None]:
        """Hold an exclusive lock shared by every process using this cache folder."""
        path = self.root / "locks" / f"{_safe(name)}.lock"
        # A lock object per call: threads of one process exclude each other as processes do.
        lock = filelock.FileLock(path, thread_local=False)
        with writing(path, where=self.root):  # a read-only cache: one line, not a traceback
            path.parent.mkdir(parents=True, exist_ok=True)
            lock.acquire()
        try:
            yield
        finally:
            lock.release()


def _safe(part: str) -> str:
    """A path component that cannot escape the cache folder or collide with another."""
    if part in {"", ".", ".."}:
        return {"": "%00", ".": "%2E", "..": "%2E%2E"}[part]
    return quote(part, safe="._-+")


def _parse_header(line: bytes) -> dict | None:
    if not line.startswith(_MAGIC) or not line.endswith(b"\n"):
        return None
    try:
        header = json.loads(line[len(_MAGIC) :])
    except ValueError:
        return None
    return header if isinstance(header, dict) else None


class _Damaged(Exception):
    """An entry that is there but cannot be trusted; the message says why."""


def _read_entry(path: Path) -> Entry | None:
    """The entry at ``path``; None when there is none. A damaged one is removed and raised."""
    try:
        raw = path.read_bytes()
    except OSError:
        return None
    try:
        return _decode(raw)
    except _Damaged:
        with contextlib.suppress(OSError):
            path.unlink()
        raise


def _decode(raw: bytes) -> Entry:
    newline = raw.find(b"\n")
    header = _parse_header(raw[: newline + 1]) if newline >= 0 else None
    if header is None:
        raise _Damaged("no canary header")
    body = raw[newline + 1 :]
    try:
        fetched_at = float(header["fetched_at"])
        if header.get("absent"):
            if body:
                raise _Damaged("an absent file's entry has content")
            return Entry(content=None, sha256=None, fetched_at=fetched_at)
        if len(body) != header["size"]:
            raise _Damaged(f"{len(body)} of {header['size']} bytes")
        if hashlib.sha256(body).hexdigest() != header["sha256"]:
            raise _Damaged("SHA-256 does not match")
        return Entry(content=body, sha256=header["sha256"], fetched_at=fetched_at)
    except (KeyError, TypeError, ValueError) as exc:
        raise _Damaged(f"bad header: {exc!r}") from None


def _write_entry(path: Path, content: bytes | None, root: Path) -> None:
    if content is None:
        header = {"absent": True, "fetched_at": time.time()}
        body = b""
    else:
        header = {
            "size": len(content),
            "sha256": hashlib.sha256(content).hexdigest(),
            "fetched_at": time.time(),
        }
        body = content
    write_atomically(
        path, _MAGIC + json.dumps(header, sort_keys=True).encode() + b"\n" + body, private=True
    )
