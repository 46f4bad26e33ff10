"""Resolution results remembered per reference and release, in the cache.

A released version's files never change (the cache relies on it), so what a reference
resolved to on a release is decided once, ever: a warm run reads one small blob per
reference instead of parsing anything. A tree that can change under its name (a branch, a
local checkout) is never remembered.

Why per release and not per digest of the files a lookup read: every lookup reads the
package's root ``__init__.py`` (attribute access starts there), and every release's root
carries its own ``__version__``, so no two releases ever share that set of files. What
patch releases do share, identical files, is shared where it costs: the content-hash code
index parses each distinct file once.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field

from canary.cache import Cache
from canary.surface.model import Outcome
from canary.symbols.alltext import TextAll

RESOLUTIONS = "surface-resolution"  # the cache's blob namespace

Decided = tuple[Outcome, str]  # the outcome and why


@dataclass
class _Remembered:
    """One reference's results: release -> (outcome, why)."""

    releases: dict[str, Decided] = field(default_factory=dict)
    changed: bool = False


class Memo:
    """What earlier runs decided, in memory and (with a cache) on disk.

    ``salt`` names everything else an outcome depends on (the resolver's code, the code
    index's format): a result decided by other code is never reused.
    """

    def __init__(self, cache: Cache | None, salt: str) -> None:
        self.cache = cache
        self.salt = salt
        self.hits = 0
        self.misses = 0
        self._entries: dict[Hashable, _Remembered] = {}

    def recall(self, key: Hashable, release: str | None) -> Decided | None:
        """The outcome remembered for ``key`` on ``release`` (None: a tree that can
        change, never remembered)."""
        found = self._entry(key).releases.get(release) if release is not None else None
        if found is None:
            self.misses += 1
        else:
            self.hits += 1
        return found

    def knows(self, key: Hashable, release: str | None) -> bool:
        """Whether an outcome of ``key`` on ``release`` is remembered (not counted)."""
        return release is not None and release in self._entry(key).releases

    def remember(self, key: Hashable, release: str | None, outcome: Outcome, why: str) -> None:
        if release is None:
            return
        entry = self._entry(key)
        entry.releases[release] = (outcome, why)
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
    releases = {release: [outcome.value, why] for release, (outcome, why) in entry.releases.items()}
    return json.dumps(releases, sort_keys=True).encode()


def _decode(blob: bytes) -> _Remembered:
    """A blob that does not read as one (a hand edit, another canary) is forgotten: it is
    derived data, decided again."""
    try:
        releases = {
            str(release): (Outcome(outcome), str(why))
            for release, (outcome, why) in json.loads(blob).items()
        }
    except (ValueError, TypeError, AttributeError):
        return _Remembered()
    return _Remembered(releases)


FOLDER_TEXTS = "surface-folder-all"  # the cache's blob namespace


class TextsMemo:
    """Each release's files' ``__all__`` as read off their text
    (:mod:`canary.symbols.alltext`), one blob per release: a lookup that misses on a
    transformers release reads every file of the package for it (about 3,300), and after
    any change to the resolver every outcome is decided again, but those reads are not.

    ``salt`` names the reader's code: what another reader read is never reused. Within a
    run, a file read on one release serves every release where the same path has the
    same fingerprint (a kept wheel's CRC-32 and size): patch releases share most files.
    """

    def __init__(self, cache: Cache | None, salt: str) -> None:
        self.cache = cache
        self.salt = salt
        self._releases: dict[str, dict[str, list[str] | None]] = {}
        self._changed: set[str] = set()
        self._same: dict[tuple[str, str], list[str] | None] = {}  # (path, fingerprint)

    def recall(self, release: str | None, paths: Sequence[str]) -> dict[str, TextAll]:
        """What was read of ``paths`` on ``release`` (those not read yet are left out)."""
        known = self._release(release)
        return {p: _names(known[p]) for p in paths if p in known}

    def recall_same(
        self, release: str | None, fingerprints: Mapping[str, str]
    ) -> dict[str, TextAll]:
        """What was read of the same files (path -> fingerprint) on another release, now
        remembered for ``release`` too."""
        same = {
            path: self._same[path, fingerprint]
            for path, fingerprint in fingerprints.items()
            if (path, fingerprint) in self._same
        }
        if same and release is not None:
            self._release(release).update(same)
            self._changed.add(release)
        return {path: _names(listed) for path, listed in same.items()}

    def remember(
        self,
        release: str | None,
        found: Mapping[str, TextAll],
        fingerprints: Mapping[str, str] | None = None,
    ) -> None:
        """What was read of each file; with its ``fingerprints``, it serves the same
        file on another release (:meth:`recall_same`)."""
        listed = {p: list(names) if names is not None else None for p, names in found.items()}
        for path, fingerprint in (fingerprints or {}).items():
            if path in listed:
                self._same[path, fingerprint] = listed[path]
        if release is None:
            return
        self._release(release).update(listed)
        self._changed.add(release)

    def save(self) -> None:
        if self.cache is None:
            return
        for release in sorted(self._changed):
            blob = json.dumps(self._releases[release], sort_keys=True).encode()
            self.cache.write_blob(FOLDER_TEXTS, self._blob_name(release), blob)
        self._changed.clear()

    def _release(self, release: str | None) -> dict[str, list[str] | None]:
        if release is None:
            return {}  # a tree that can change: read again every time
        if release not in self._releases:
            name = self._blob_name(release)
            blob = self.cache.read_blob(FOLDER_TEXTS, name) if self.cache else None
            self._releases[release] = _decode_texts(blob) if blob else {}
        return self._releases[release]

    def _blob_name(self, release: str) -> str:
        return hashlib.sha256(f"{self.salt}\0{release}".encode()).hexdigest()


def _names(listed: list[str] | None) -> TextAll:
    return tuple(listed) if listed is not None else None


def _decode_texts(blob: bytes) -> dict[str, list[str] | None]:
    """A blob that does not read as one is forgotten: derived data, read again."""
    try:
        found = json.loads(blob)
        if isinstance(found, dict) and all(
            v is None or (isinstance(v, list) and all(isinstance(n, str) for n in v))
            for v in found.values()
        ):
            return {str(p): v for p, v in found.items()}
    except ValueError:
        pass
    return {}
