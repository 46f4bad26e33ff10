"""Which hosts stopped answering: shared by the sources of a run so a dead host fails fast.

Used by the GitHub source (per host) and the package-index source (pip's index, seen only
through pip's output), so one dead endpoint costs a run a few attempts, not one per case.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable


class HostHealth:
    """Which hosts stopped answering, shared by every source of a run.

    Every case of a run has its own source, and each file its own retries: without this,
    a host that is down costs every case a full round of backoff (about 30 s each). A host
    is called down, and every later request to it fails at once for ``hold`` seconds, when
    ``threshold`` attempts in a row got no answer, or when a file gave up on server errors
    (5xx through its whole backoff) while server errors hit at least two different files
    with no success between: one broken file is that file's problem, every file failing
    is the host's.
    """

    def __init__(self, *, hold: float = 600.0, clock: Callable[[], float] = time.monotonic):
        self.hold = hold
        self._clock = clock
        self._lock = threading.Lock()
        self._misses: dict[str, int] = {}
        self._erring: dict[str, set[str]] = {}  # host -> files answered 5xx since a success
        self._down: dict[str, tuple[float, str, str]] = {}  # host -> (since, why, cause)

    def down_reason(self, host: str) -> str | None:
        """Why ``host`` is down (the last reason, and how often), or None when it may be
        tried."""
        down = self._current(host)
        return None if down is None else down[1]

    def down_cause(self, host: str) -> str | None:
        """The last reason ``host`` gave, as it was reported, while it is down."""
        down = self._current(host)
        return None if down is None else down[2]

    def _current(self, host: str) -> tuple[float, str, str] | None:
        with self._lock:
            down = self._down.get(host)
            if down is None:
                return None
            if self._clock() - down[0] > self.hold:
                del self._down[host]
                self._misses.pop(host, None)
                self._erring.pop(host, None)
                return None
            return down

    def no_answer(self, host: str, reason: str, threshold: int) -> None:
        with self._lock:
            self._misses[host] = misses = self._misses.get(host, 0) + 1
            if misses >= threshold and host not in self._down:
                why = f"{misses} attempts in a row: {reason}"
                self._down[host] = (self._clock(), why, reason)

    def server_error(self, host: str, path: str) -> None:
        with self._lock:
            self._erring.setdefault(host, set()).add(path)

    def gave_up(self, host: str, reason: str) -> None:
        """A request to ``host`` exhausted its retries on server errors."""
        with self._lock:
            erring = len(self._erring.get(host, ()))
            if erring >= 2 and host not in self._down:
                why = f"{reason} on {erring} files, no success between"
                self._down[host] = (self._clock(), why, reason)

    def answered(self, host: str) -> None:
        with self._lock:
            self._misses.pop(host, None)
            self._erring.pop(host, None)
            self._down.pop(host, None)
