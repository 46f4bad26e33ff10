"""A status line for long cold fetches, drawn from the workspace's counters.

A background thread polls :class:`canary.upstream.Stats` (it never touches the fetch
code) and rewrites one line on a terminal: releases and packages in the plan, files read
of the files planned, megabytes downloaded. Nothing is drawn when the plan is already in
the cache (the line appears only after a second of fetching), and nothing in a CI log
unless asked: ``--canary-progress=on`` prints a plain line every few seconds instead.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Mapping
from typing import TextIO

from canary.upstream import Case, Stats

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
    ) -> None:
        self.stats = stats
        self.stream = stream
        self.tty = stream.isatty()
        self.interval = interval if interval is not None else (0.5 if self.tty else 5.0)
        self.delay = delay
        self.cases = len(plan)
        self.packages = len({case.package for case in plan})
        self.planned = sum(len(paths) for paths in plan.values())
        self._start_files = self._files()
        self._start_bytes = stats.bytes_downloaded
        self._started = time.monotonic()
        self._drawn = False
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
        if self.tty:
            # \r + erase: one line rewritten in place, ended once at the end.
            self.stream.write(f"\r\x1b[K{self.line()}" + ("\n" if final else ""))
        else:
            self.stream.write(self.line() + "\n")
        self.stream.flush()
        self._drawn = True


def start(choice: str, stats: Stats, plan: Mapping[Case, set[str]]) -> Progress | None:
    stream = sys.stderr
    if not plan or not wanted(choice, stream):
        return None
    return Progress(stats, plan, stream).start()
