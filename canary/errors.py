"""The failures canary can raise, by kind.

Catch :class:`InfrastructureError` for "nothing was checked" (network, pip, cache,
parse), :class:`ConfigError` for bad input the user can fix, and :class:`Drift` for
"upstream changed": the only kind that is a check failure.
"""

from __future__ import annotations

from dataclasses import dataclass


class CanaryError(Exception):
    """Base of every error canary raises on purpose."""


class ConfigError(CanaryError):
    """Bad input: tags.toml, a command-line option, a local tree. The message says how to fix it."""


class InfrastructureError(CanaryError):
    """Something stopped canary from checking. Never a pass, never a drift."""


class FetchError(InfrastructureError):
    """Upstream text could not be fetched (network, HTTP, pip)."""


class RefNotFound(FetchError):
    """The version or git ref itself does not exist at the source."""


class OfflineMiss(InfrastructureError):
    """``--canary-offline`` was given and the cache does not hold what is needed."""


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
    """Upstream no longer has the shape a fix relies on. A check failure, not an error."""

    def __init__(self, *args: object, subject: Subject | None = None) -> None:
        super().__init__(*args)
        self.subject = subject
