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
    a host that is down costs every case a full round of backoff (about 30 s each). After
    ``threshold`` attempts in a row got no answer from a host, with no success between,
    it is called down and every later request to it fails at once, for ``hold`` seconds.
    """

    def __init__(self, *, hold: float = 600.0, clock: Callable[[], float] = time.monotonic):
        self.hold = hold
        self._clock = clock
        self._lock = threading.Lock()
        self._misses: dict[str, int] = {}
        self._down: dict[str, tuple[float, int, str]] = {}  # host -> (since, misses, reason)

    def down_reason(self, host: str) -> str | None:
        """Why ``host`` is down, or None when it may be tried."""
        down = self._current(host)
        return None if down is None else f"{down[1]} attempts in a row: {down[2]}"

    def down_cause(self, host: str) -> str | None:
        """The last reason ``host`` gave, as it was reported, while it is down."""
        down = self._current(host)
        return None if down is None else down[2]

    def _current(self, host: str) -> tuple[float, int, str] | None:
        with self._lock:
            down = self._down.get(host)
            if down is None:
                return None
            if self._clock() - down[0] > self.hold:
                del self._down[host]
                self._misses.pop(host, None)
                return None
            return down

    def no_answer(self, host: str, reason: str, threshold: int) -> None:
        with self._lock:
            self._misses[host] = misses = self._misses.get(host, 0) + 1
            if misses >= threshold and host not in self._down:
                self._down[host] = (self._clock(), misses, reason)

    def answered(self, host: str) -> None:
        with self._lock:
            self._misses.pop(host, None)
            self._down.pop(host, None)
