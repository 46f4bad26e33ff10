"""The failures canary can raise, by kind.

Catch :class:`InfrastructureError` for "nothing was checked" (network, pip, cache,
parse), :class:`ConfigError` for bad input the user can fix, and :class:`Drift` for
"upstream changed": the only kind that is a check failure.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TypeVar

_E = TypeVar("_E", bound="InfrastructureError")


class CanaryError(Exception):
    """Base of every error canary raises on purpose."""


class ConfigError(CanaryError):
    """Bad input: tags.toml, a command-line option, a local tree. The message says how to fix it."""


class InfrastructureError(CanaryError):
    """Something stopped canary from checking. Never a pass, never a drift.

    ``cause`` is the reason without the case in it (``cannot reach the package index (pip:
    connection refused)``), so the end of a run can group thousands of errors into one
    line; None: the message itself is the cause.
    """

    def __init__(self, *args: object, cause: str | None = None) -> None:
        super().__init__(*args)
        self.cause = cause

    def again(self: _E) -> _E:
        """A fresh copy to raise for another check of the same case: re-raising one object
        would grow its traceback by every raise (473 errors made 6.5 MB of output)."""
        fresh = type(self).__new__(type(self), *self.args)
        fresh.__dict__.update(self.__dict__)  # cause, path: whatever the subclass keeps
        return fresh


class FetchError(InfrastructureError):
    """Upstream text could not be fetched (network, HTTP, pip)."""


class RefNotFound(FetchError):
    """The version or git ref itself does not exist at the source."""


class OfflineMiss(InfrastructureError):
    """``--canary-offline`` was given and the cache does not hold what is needed."""


class IndexUnreachable(FetchError):
    """pip could not reach the package index (refused, DNS, TLS, timeout, proxy)."""


class CacheDamaged(InfrastructureError):
    """A cache entry is truncated or garbage; ``path`` is the file on disk."""

    def __init__(self, *args: object, path: str = "", cause: str | None = None) -> None:
        super().__init__(*args, cause=cause)
        self.path = path


class WriteFailed(InfrastructureError):
    """A file canary writes (a report, a baseline, results, a cache entry) could not be
    written; the previous file is intact. ``path`` is the file, ``reason`` the system's."""

    def __init__(self, *args: object, path: str = "", cause: str | None = None) -> None:
        super().__init__(*args, cause=cause)
        self.path = path

    @classmethod
    def of(
        cls, path: object, error: OSError, *, where: object = None, replacing: bool = False
    ) -> WriteFailed:
        """``where``: the folder the cause names (a cache's root); default the file's.
        ``replacing``: the write was to replace the file whole (then the old one stays)."""
        reason = error.strerror or str(error)
        folder = where if where is not None else (os.path.dirname(str(path)) or ".")
        kept = " (nothing was replaced: a previous file is intact)" if replacing else ""
        return cls(
            f"cannot write {path}: {reason}{kept}",
            path=str(path),
            cause=f"cannot write under {folder}: {reason}",
        )


class MissingDependency(InfrastructureError):
    """A module canary needs is not installed (a failed or partial install)."""

    @classmethod
    def of(cls, error: ImportError, *, needed_for: str) -> MissingDependency:
        name = error.name or str(error)
        return cls(
            f"{name} is not installed ({error}), needed for {needed_for}: install canary "
            f"with its dependencies (pip install -e .)",
            cause=f"missing dependency: {name} is not installed",
        )


class ParseError(InfrastructureError):
    """An upstream file the running Python cannot parse."""


@dataclass(frozen=True)
class Subject:
    """What a check was looking at when it found drift: a file, and the class or function
    in it (``"Trainer.compute_loss"``) when there is one. The matrix report diffs it
    between the last passing and the first failing version."""

    path: str | None
    qualname: str | None = None


class Drift(AssertionError):
    """Upstream no longer has the shape a fix relies on. A check failure, not an error.

    ``subject`` is what the check was looking at (the matrix report diffs it between the
    last passing and the first failing release); ``kind`` says whether it is gone
    (:data:`MISSING`: a file, class, function or name upstream no longer has) or still
    there in another shape (:data:`CHANGED`). A catalog check re-raises the drift an
    expectation found as a :class:`CheckDrift` that also names the fix at risk.
    """

    MISSING = "missing"
    CHANGED = "changed"

    def __init__(self, *args: object, subject: Subject | None = None, kind: str = CHANGED) -> None:
        super().__init__(*args)
        if kind not in (self.MISSING, self.CHANGED):
            wanted = f"{self.MISSING!r} or {self.CHANGED!r}"
            raise ValueError(f"Drift kind must be {wanted}, not {kind!r}")
        self.subject = subject
        self.kind = kind


class CheckDrift(Drift):
    """The drift a catalog check reports: the message says which fix breaks, in which
    case, what the check expects and what upstream has instead. Shown without a
    traceback: the message is the finding."""

    def __init__(
        self, message: str, *, fix: str, subject: Subject | None = None, kind: str = Drift.CHANGED
    ) -> None:
        super().__init__(message, subject=subject, kind=kind)
        self.fix = fix
