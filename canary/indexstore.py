"""Code indexes by content: each distinct upstream file is parsed once, ever.

An index is keyed by the SHA-256 of the file's bytes alone: patch releases share most
files, so a file met again (in another release, or in a later run) is a dictionary hit or
an unpickled blob from the cache, relabeled to name the case being checked. A file met
for the first time is parsed in place, or, while a large prefetch downloads, in a parse
process: parsing holds the GIL, and the downloads want this process's threads.
"""

from __future__ import annotations

import contextlib
import gc
import hashlib
import multiprocessing
import os
import pickle
import threading
import time
from collections.abc import Callable
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from pathlib import Path

from canary import codeindex
from canary.cache import Cache
from canary.gcpause import no_collections

ParseJob = Future[tuple[bytes, float]]
"""A parse handed to a parse process: its result is the pickled index and the seconds the
parse took; a ParseError of the file, or BrokenProcessPool, is raised from ``result()``."""


class IndexStore:
    """The run's code indexes, in memory and in the cache, with one pool of parse processes.

    ``count`` receives the store's counters (``modules_parsed``, ``modules_from_cache``,
    ``parse_seconds``) as keyword amounts: the workspace's run statistics.
    """

    def __init__(
        self,
        cache: Cache | None,
        count: Callable[..., None],
        *,
        processes: int | None = None,
    ) -> None:
        self.cache = cache
        self.count = count
        # None: one process per core where there is more than one core.
        if processes is None:
            processes = os.cpu_count() or 1
            processes = processes if processes > 1 else 0
        self.processes = processes
        self.in_processes = False  # switched on by a prefetch worth the processes' start-up
        self._pool: Executor | None = None
        self._indexes: dict[str, codeindex.Module] = {}
        self._jobs: dict[str, ParseJob] = {}
        self._job_indexes: dict[ParseJob, codeindex.Module] = {}
        self._lock = threading.RLock()

    def index(self, content: bytes, path: str, origin: str) -> codeindex.Module | ParseJob:
        """The index of ``content`` labelled ``path`` in ``origin``, or the parse process's
        job where it was handed to one (see :meth:`finish`)."""
        digest = hashlib.sha256(content).hexdigest()
        module = self._indexes.get(digest)
        if module is None and self.cache is not None:
            module = _cached_module(self.cache.read_blob(codeindex.INDEX_KEY, digest))
            if module is not None:
                self._indexes[digest] = module
        if module is not None:
            self.count(modules_from_cache=1)
            return module.relabeled(path=path, origin=origin)
        if self.in_processes and self.processes > 0:
            with self._lock:
                job = self._jobs.get(digest)
                if job is not None:  # another case's copy of the same file is being parsed
                    self.count(modules_from_cache=1)
                    return job
                try:
                    job = self._parse_pool().submit(
                        _parse_to_blob, content, path, origin, self._cache_root
                    )
                except (BrokenProcessPool, RuntimeError):  # broken or shut down
                    return self.parse_here(content, path, origin)
                job.add_done_callback(self._count_job)
                self._jobs[digest] = job
                return job
        return self.parse_here(content, path, origin)

    def finish(self, job: ParseJob, path: str, origin: str) -> codeindex.Module:
        """The index a parse process made, unpickled once however many cases share the
        file. Raises the file's ParseError, or BrokenProcessPool where the process died
        (the caller parses in place: :meth:`parse_here`)."""
        blob, _ = job.result()
        with self._lock:
            if (index := self._job_indexes.get(job)) is None:
                index = self._job_indexes[job] = _load_index(blob)
        return index.relabeled(path=path, origin=origin)

    def parse_here(self, content: bytes, path: str, origin: str) -> codeindex.Module:
        blob, seconds = _parse_to_blob(content, path, origin, self._cache_root)
        self.count(modules_parsed=1, parse_seconds=seconds)
        return _load_index(blob)

    def close(self) -> None:
        if self._pool is not None:
            # Waiting lets the workers exit cleanly (no leaked semaphores); by now they
            # are idle or their jobs were cancelled.
            self._pool.shutdown(wait=True, cancel_futures=True)

    @property
    def _cache_root(self) -> Path | None:
        return self.cache.root if self.cache is not None else None

    def _parse_pool(self) -> Executor:
        if self._pool is None:
            # spawn, not fork: this process already runs threads holding locks.
            self._pool = ProcessPoolExecutor(
                self.processes,
                mp_context=multiprocessing.get_context("spawn"),
                initializer=_yield_to_downloads,
            )
        return self._pool

    def _count_job(self, job: ParseJob) -> None:
        if not job.cancelled() and job.exception() is None:
            self.count(modules_parsed=1, parse_seconds=job.result()[1])


def _yield_to_downloads() -> None:
    # Downloads (pip) are the run's critical path and want CPU too; parsing fills the
    # gaps and catches up once they are done.
    if hasattr(os, "nice"):
        with contextlib.suppress(OSError):
            os.nice(10)


def _cached_module(blob: bytes | None) -> codeindex.Module | None:
    if not blob:
        return None
    try:
        module = _load_index(blob)
    except Exception:  # a pickle from another canary: parse again and overwrite it
        return None
    return module if isinstance(module, codeindex.Module) else None


def _load_index(blob: bytes) -> codeindex.Module:
    with no_collections():
        module = pickle.loads(blob)
    # A warm full run holds hundreds of MB of code indexes for its whole length, and every
    # full collection of the cyclic GC would walk them again (a fifth of a warm run).
    # They are immutable and live until the end: move them out of the collector's sight.
    gc.freeze()
    return module


def _parse_to_blob(
    content: bytes, path: str, origin: str, cache_root: Path | None
) -> tuple[bytes, float]:
    """Parse one file and keep its code index; runs in a parse process or in place.

    Returns the pickled index (what crosses the process boundary anyway) and the seconds
    the parse took. A ParseError is raised to the caller, pickled across if need be.
    """
    started = time.perf_counter()
    with no_collections():
        module = codeindex.parse_module(content, path=path, origin=origin)
        seconds = time.perf_counter() - started
        blob = pickle.dumps(module, protocol=5)
    if cache_root is not None:
        digest = hashlib.sha256(content).hexdigest()
        Cache(cache_root).write_blob(codeindex.INDEX_KEY, digest, blob)
    return blob, seconds
