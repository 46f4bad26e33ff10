"""The static tier's outcomes remembered: a check on a case is answered from an earlier run
when nothing it depends on changed, without reading a code index.

An outcome (a pass, a drift with its message, fix and subject, a skip with its reason) is
remembered under everything it depends on: the case and the version its tree declares;
the check's own code (:mod:`canary.plugin.checkcode`, with the options that change how a
failed plain ``assert`` reads where it has one); the engine (``salt``: canary's package,
the Python, pytest); and the digest of every file the check's snapshot held (``reads=``,
and the files the static MRO of its ``inherits=`` pulled in; ``helpers=`` are modules of
the snapshot too). A release, a local tree and ``main`` at any commit are keyed alike: a
remembered outcome whose files no longer have those digests is a miss, and the case runs
as it always did. Errors are never remembered: nothing was checked.

One blob per case and Python holds its checks' entries (the surface's
:mod:`canary.surface.memo` keeps one per reference the same way): a warm run reads a few
hundred small blobs. The engine's digest is inside the blob, not in its name, so a new
canary overwrites what the last one wrote instead of leaving it behind (about 2 MB a full
run); Pythons sharing a cache keep theirs apart. The cache writes blobs atomically with a
digest in the header; a blob that is damaged or does not read as one is forgotten, so
every check of that case runs again.
"""

from __future__ import annotations

import enum
import hashlib
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NoReturn

import pytest

from canary.cache import Cache
from canary.errors import CheckDrift, Drift, InfrastructureError, Subject
from canary.workspace import Case

OUTCOMES = "static-outcomes"  # the cache's blob namespace
FORMAT = "1"  # of the blobs: a new one forgets every outcome an older canary wrote
_PYTHON = f"{sys.implementation.name} {sys.version}"  # each keeps its own blobs


class Verdict(enum.Enum):
    """What a check's body decided."""

    PASS = "pass"
    DRIFT = "drift"
    SKIP = "skip"


@dataclass(frozen=True)
class Outcome:
    """A check's decided outcome on a case, as it can be given again."""

    verdict: Verdict
    message: str = ""  # a drift's message, a skip's reason
    fix: str = ""
    subject: Subject | None = None
    kind: str = Drift.CHANGED

    @classmethod
    def of_call(cls, excinfo: pytest.ExceptionInfo[BaseException] | None) -> Outcome | None:
        """What a check's call decided; None where it decided nothing that may be given
        again (an error, a crash, an interrupt, an imperative xfail)."""
        if excinfo is None:
            return cls(Verdict.PASS)
        error = excinfo.value
        if isinstance(error, CheckDrift):
            return cls(Verdict.DRIFT, str(error), error.fix, error.subject, error.kind)
        if isinstance(error, pytest.skip.Exception):
            return cls(Verdict.SKIP, str(error.msg))
        return None

    def replay(self) -> None:
        """Decide the call as the check did: return for a pass, raise the same drift or skip."""
        if self.verdict is Verdict.DRIFT:
            self._drift()
        if self.verdict is Verdict.SKIP:
            pytest.skip(self.message)

    def _drift(self) -> NoReturn:
        raise CheckDrift(self.message, fix=self.fix, subject=self.subject, kind=self.kind)

    def to_json(self) -> dict[str, Any]:
        subject = [self.subject.path, self.subject.qualname] if self.subject else None
        return {
            "verdict": self.verdict.value,
            "message": self.message,
            "fix": self.fix,
            "subject": subject,
            "kind": self.kind,
        }

    @classmethod
    def from_json(cls, data: Any) -> Outcome:
        """Raises ValueError, TypeError or KeyError for anything that is not one."""
        subject = data["subject"]
        if subject is not None:
            path, qualname = subject
            subject = Subject(_optional_str(path), _optional_str(qualname))
        kind = data["kind"]
        if kind not in (Drift.MISSING, Drift.CHANGED):
            raise ValueError(kind)
        message, fix = _str(data["message"]), _str(data["fix"])
        return cls(Verdict(data["verdict"]), message, fix, subject, kind)


@dataclass(frozen=True)
class Entry:
    """One check's remembered outcome on a case, and what it was decided from."""

    key: str  # the check's code, the case's version, the judging options
    files: Mapping[str, str]  # path -> content digest of every file its snapshot held
    outcome: Outcome

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "files": dict(self.files), "outcome": self.outcome.to_json()}

    @classmethod
    def from_json(cls, data: Any) -> Entry:
        files = data["files"]
        if not isinstance(files, dict):
            raise TypeError("files")
        return cls(
            _str(data["key"]),
            {_str(p): _str(d) for p, d in files.items()},
            Outcome.from_json(data["outcome"]),
        )


@dataclass
class _CaseEntries:
    checks: dict[str, Entry] = field(default_factory=dict)
    changed: set[str] = field(default_factory=set)


Digests = Callable[[Sequence[str]], Mapping[str, str]]  # paths -> their current digests


class OutcomeMemo:
    """What earlier runs decided, per case, in memory and (with a cache) on disk.

    ``salt`` names the engine (:func:`canary.plugin.checkcode.engine_digest`): an outcome
    another canary, or another Python, decided is never given again.
    """

    def __init__(self, cache: Cache | None, salt: str) -> None:
        self.cache = cache
        self.salt = salt
        self._cases: dict[Case, _CaseEntries] = {}

    def recall(self, case: Case, check: str, key: str, digests: Digests) -> Outcome | None:
        """The outcome remembered for ``check`` on ``case`` under ``key``, where every file
        it was decided from still has the digest it had (``digests`` gives them now);
        None otherwise, and where a file cannot be read (the case's run says why)."""
        entry = self._case(case).checks.get(check)
        if entry is None or entry.key != key:
            return None
        try:
            now = digests(sorted(entry.files))
        except InfrastructureError:
            return None
        if any(now.get(path) != digest for path, digest in entry.files.items()):
            return None
        return entry.outcome

    def remember(
        self, case: Case, check: str, key: str, files: Mapping[str, str], outcome: Outcome
    ) -> None:
        entries = self._case(case)
        entries.checks[check] = Entry(key, dict(files), outcome)
        entries.changed.add(check)

    def save(self) -> None:
        """Write every case whose entries changed, merged with what another process
        (an xdist worker) wrote of the same case meanwhile; nothing without a cache."""
        if self.cache is None:
            return
        for case, entries in self._cases.items():
            if not entries.changed:
                continue
            name = self._blob_name(case)
            with self.cache.lock(f"{OUTCOMES}-{name}"):
                merged = _decode(self.cache.read_blob(OUTCOMES, name), self.salt)
                merged.update({check: entries.checks[check] for check in entries.changed})
                self.cache.write_blob(OUTCOMES, name, _encode(merged, self.salt))
            entries.changed.clear()

    def _case(self, case: Case) -> _CaseEntries:
        if (entries := self._cases.get(case)) is None:
            blob = self.cache.read_blob(OUTCOMES, self._blob_name(case)) if self.cache else None
            entries = self._cases[case] = _CaseEntries(_decode(blob, self.salt))
        return entries

    def _blob_name(self, case: Case) -> str:
        named = "\0".join((FORMAT, _PYTHON, case.source, case.package, case.label))
        return hashlib.sha256(named.encode()).hexdigest()


def outcome_key(code: str, version: object) -> str:
    """An entry's key: the check's code digest (with the options that change how its
    failure reads) and the version the case's tree declares (a check may read it)."""
    return hashlib.sha256(f"{code}\0{version}".encode()).hexdigest()


def _encode(checks: Mapping[str, Entry], engine: str) -> bytes:
    entries = {name: entry.to_json() for name, entry in sorted(checks.items())}
    return json.dumps({"engine": engine, "checks": entries}, separators=(",", ":")).encode()


def _decode(blob: bytes | None, engine: str) -> dict[str, Entry]:
    """The entries another run of this engine wrote. A blob of another engine is
    forgotten, and so is one that does not read as one (a hand edit, another canary's
    format): it is derived data, decided again."""
    if not blob:
        return {}
    try:
        data = json.loads(blob)
        if data["engine"] != engine:
            return {}
        return {_str(name): Entry.from_json(entry) for name, entry in data["checks"].items()}
    except (ValueError, TypeError, KeyError, AttributeError):
        return {}


def _str(value: Any) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {type(value).__name__}")
    return value


def _optional_str(value: Any) -> str | None:
    return None if value is None else _str(value)
