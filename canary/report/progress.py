"""A status line for long cold fetches, drawn from the workspace's counters.

A background thread polls :class:`canary.workspace.Stats` (it never touches the fetch
code) and rewrites one line on a terminal: releases and packages in the plan, files read
of the files planned, megabytes downloaded. Nothing is drawn when the plan is already in
the cache (the line appears only after a second of fetching), and nothing in a CI log
unless asked: ``--canary-progress=on`` prints a plain line every few seconds instead.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager as ContextManager
from typing import TextIO

from canary.workspace import Case, Stats

CHOICES = ("auto", "on", "off")


def wanted(choice: str, stream: TextIO) -> bool:
    """``auto``: on a terminal that is not a CI job's."""
    if choice == "auto":
        return stream.isatty() and not os.environ.get("CI")
    return choice == "on"


class Progress:
    def __init__(
        self,
        stats: Stats,
        plan: Mapping[Case, set[str]],
        stream: TextIO,
        *,
        interval: float | None = None,
        delay: float = 1.0,
        uncaptured: Callable[[], ContextManager[object]] = contextlib.nullcontext,
    ) -> None:
        self.stats = stats
        self.stream = stream
        self.uncaptured = uncaptured
        self.tty = stream.isatty()
        self.interval = interval if interval is not None else (0.5 if self.tty else 5.0)
        self.delay = delay
        self.cases = len(plan)
        self.packages = len({case.package for case in plan})
        self.planned = sum(len(paths) for paths in plan.values())
        self._start_files = self._files()
        self._start_bytes = stats.bytes_downloaded
        self._started = time.monotonic()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="canary-progress", daemon=True)

    def start(self) -> Progress:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=2)

    def line(self) -> str:
        done = min(self._files() - self._start_files, self.planned)
        megabytes = (self.stats.bytes_downloaded - self._start_bytes) / 1e6
        elapsed = time.monotonic() - self._started
        return (
            f"canary: {self.cases} releases of {self.packages} package(s): "
            f"{done}/{self.planned} files, {megabytes:.1f} MB downloaded, {elapsed:.0f} s"
        )

    def finished(self) -> bool:
        return self._files() - self._start_files >= self.planned

    def _files(self) -> int:
        return self.stats.files_from_cache + self.stats.files_fetched

    def _loop(self) -> None:
        if self._stop.wait(self.delay) or self.finished():
            return  # a warm run: nothing worth a line
        while True:
            self._draw(final=False)
            if self._stop.wait(self.interval) or self.finished():
                break
        self._draw(final=True)

    def _draw(self, *, final: bool) -> None:
        text = self.line()
        with self.uncaptured():
            stream = self.stream
            if self.tty:
                # \r + erase: one line rewritten in place, ended once at the end.
                stream.write(f"\r\x1b[K{text}" + ("\n" if final else ""))
            else:
                stream.write(text + "\n")
            stream.flush()


def start(
    choice: str,
    stats: Stats,
    plan: Mapping[Case, set[str]],
    uncaptured: Callable[[], ContextManager[object]] = contextlib.nullcontext,
) -> Progress | None:
    """``uncaptured`` suspends pytest's output capture (which holds fd 2 while a test's
    setup waits for its fetch) around each line."""
    if not plan:
        return None
    with uncaptured():
        if not wanted(choice, sys.stderr):
            return None
    return Progress(stats, plan, _Stderr(), uncaptured=uncaptured).start()


class _Stderr:
    """Whatever sys.stderr is at the moment of writing (the real one, capture suspended)."""

    def isatty(self) -> bool:
        return sys.stderr.isatty()

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()
