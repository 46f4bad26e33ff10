"""A status line for long cold fetches, drawn from the workspace's counters.

A background thread polls :class:`canary.workspace.Stats` (it never touches the fetch
code) and rewrites one line on a terminal: releases and packages in the plan, files read
of the files planned, megabytes downloaded. Nothing is drawn when the plan is already in
the cache (the line appears only after a second of fetching), and nothing in a CI log
unless asked: ``--canary-progress=on`` prints a plain line every few seconds instead.

pytest is writing its rows of dots on the same terminal meanwhile, so the line is drawn on
the row below the cursor and the cursor is put back where pytest left it (``column``: how
far along its row pytest is); when fetching is done the line is erased, so nothing of it
is left in the scrollback between pytest's rows.
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
        column: Callable[[], int] = lambda: 0,
    ) -> None:
        self.stats = stats
        self.stream = stream
        self.uncaptured = uncaptured
        self.column = column
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
            sys.stdout.flush()  # pytest's dots so far, so the column below is where they end
            column = self.column()
            stream = self.stream
            if self.tty:
                # Down a row (scrolling if need be), erase it, write (or, at the end, leave
                # it erased), then back up to pytest's row and column.
                shown = "" if final else text
                back = f"\x1b[{column}C" if column else ""
                stream.write(f"\n\x1b[2K{shown}\x1b[1A\r{back}")
            else:  # a log: a line of its own, never glued to a row of dots
                stream.write(("\n" if column else "") + text + "\n")
            stream.flush()


def start(
    choice: str,
    stats: Stats,
    plan: Mapping[Case, set[str]],
    uncaptured: Callable[[], ContextManager[object]] = contextlib.nullcontext,
    column: Callable[[], int] = lambda: 0,
) -> Progress | None:
    """``uncaptured`` suspends pytest's output capture (which holds fd 2 while a test's
    setup waits for its fetch) around each line; ``column`` is how far along its current
    row pytest's output is."""
    if not plan:
        return None
    with uncaptured():
        if not wanted(choice, sys.stderr):
            return None
    return Progress(stats, plan, _Stderr(), uncaptured=uncaptured, column=column).start()


class _Stderr:
    """Whatever sys.stderr is at the moment of writing (the real one, capture suspended)."""

    def isatty(self) -> bool:
        return sys.stderr.isatty()

    def write(self, text: str) -> int:
        return sys.stderr.write(text)

    def flush(self) -> None:
        sys.stderr.flush()
