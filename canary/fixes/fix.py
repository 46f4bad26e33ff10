"""What a fix is: a patch that depends on upstream internals, named by the checks that
protect it. A leaf module: the registry and the downstream table both build on it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Fix:
    """A patch that depends on upstream internals, named by checks that protect it."""

    name: str
    summary: str
    module: str | None = None  # the module in this package; None for a downstream patch
    reference: str | None = None  # where a downstream patch lives: "unsloth-zoo#549"

    @property
    def kind(self) -> str:
        return "fix" if self.module is not None else "downstream patch"

    def __str__(self) -> str:
        where = f" ({self.reference})" if self.reference else ""
        return f"{self.kind} {self.name!r}{where}"
