"""Resolution results remembered by the files they were decided from.

Whether a reference resolves on a release depends on the few upstream files its lookup
read and on nothing else. Keyed by the reference and the SHA-256 of each of those files
(a file found absent counts too), an outcome decided on one release is reused on every
release whose files are identical, in this run and, through one cache blob per
reference, in later runs: most files are the same across patch releases, so a warm run
reads digests instead of parsing.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field

from canary.cache import Cache
from canary.surface.model import Outcome

RESOLUTIONS = "surface-resolution"  # the cache's blob namespaces
DIGESTS = "surface-digests"

Digests = tuple[str | None, ...]  # one per path of a group; None: the file is absent
Decided = tuple[Outcome, str]  # the outcome and why


@dataclass
class _Remembered:
    """One reference's results: per set of paths a lookup read (sorted), the outcome
    for each combination of their digests seen so far."""

    groups: dict[tuple[str, ...], dict[Digests, Decided]] = field(default_factory=dict)
    changed: bool = False


class Memo:
    """What earlier lookups decided, in memory and (with a cache) on disk.

    ``salt`` names everything else an outcome depends on (the resolver's code, the code
    index's format): a result decided by other code is never reused.
    """

    def __init__(self, cache: Cache | None, salt: str) -> None:
        self.cache = cache
        self.salt = salt
        self.hits = 0
        self.misses = 0
        self._entries: dict[Hashable, _Remembered] = {}

    def paths(self, key: Hashable) -> set[str]:
        """Every path a remembered result of ``key`` was decided from (to read them in one
        go before recalling)."""
        return {path for paths in self._entry(key).groups for path in paths}

    def recall(self, key: Hashable, digest: Callable[[str], str | None]) -> Decided | None:
        """The outcome remembered for ``key`` on files with these digests (``digest(path)``
        on the release at hand), or None when no lookup read exactly these files."""
        for paths, results in self._entry(key).groups.items():
            found = results.get(tuple(digest(path) for path in paths))
            if found is not None:
                self.hits += 1
                return found
        self.misses += 1
        return None

    def remember(
        self, key: Hashable, files: Mapping[str, str | None], outcome: Outcome, why: str
    ) -> None:
        """``key`` resolved to ``outcome`` from exactly ``files`` (path -> digest)."""
        entry = self._entry(key)
        paths = tuple(sorted(files))
        entry.groups.setdefault(paths, {})[tuple(files[p] for p in paths)] = (outcome, why)
        entry.changed = True

    def save(self) -> None:
        """Write every reference whose results grew (nothing without a cache)."""
        if self.cache is None:
            return
        for key, entry in self._entries.items():
            if entry.changed:
                self.cache.write_blob(RESOLUTIONS, self._blob_name(key), _encode(entry))
                entry.changed = False

    def _entry(self, key: Hashable) -> _Remembered:
        entry = self._entries.get(key)
        if entry is None:
            blob = self.cache.read_blob(RESOLUTIONS, self._blob_name(key)) if self.cache else None
            entry = self._entries[key] = _decode(blob) if blob else _Remembered()
        return entry

    def _blob_name(self, key: Hashable) -> str:
        return hashlib.sha256(f"{self.salt}\0{json.dumps(key)}".encode()).hexdigest()


def _encode(entry: _Remembered) -> bytes:
    groups = [
        {
            "paths": list(paths),
            "results": [[list(d), outcome.value, why] for d, (outcome, why) in results.items()],
        }
        for paths, results in entry.groups.items()
    ]
    return json.dumps({"groups": groups}, sort_keys=True).encode()


def _decode(blob: bytes) -> _Remembered:
    """A blob that does not read as one (hand edit, another canary) is forgotten: it is
    derived data, decided again."""
    try:
        groups = {
            tuple(group["paths"]): {
                tuple(digests): (Outcome(outcome), str(why))
                for digests, outcome, why in group["results"]
            }
            for group in json.loads(blob)["groups"]
        }
    except (ValueError, KeyError, TypeError):
        return _Remembered()
    return _Remembered(groups)


class ReleaseDigests:
    """The digest of each file of one release that a lookup asked for (None: absent),
    kept in one cache blob per release: a released file never changes, so a warm run
    reads one blob per release instead of every file it remembers results by. ``key``
    None (a branch, a local tree) keeps nothing on disk."""

    def __init__(self, cache: Cache | None, key: str | None) -> None:
        self.cache = cache if key is not None else None
        self.key = key or ""
        self.digests: dict[str, str | None] = {}
        self._saved = 0
        if self.cache is not None and (blob := self.cache.read_blob(DIGESTS, self._name)):
            with contextlib.suppress(ValueError, TypeError, AttributeError):
                self.digests = {str(p): d for p, d in json.loads(blob).items()}
                self._saved = len(self.digests)

    def save(self) -> None:
        if self.cache is not None and len(self.digests) > self._saved:
            blob = json.dumps(self.digests, sort_keys=True).encode()
            self.cache.write_blob(DIGESTS, self._name, blob)
            self._saved = len(self.digests)

    @property
    def _name(self) -> str:
        return hashlib.sha256(self.key.encode()).hexdigest()
