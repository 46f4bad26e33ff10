"""Declared requirements of a released distribution, read from its wheel's METADATA.

The wheel is the one canary keeps in its cache (``<cache>/wheels``), downloaded with
``pip download`` on a miss, so the sweep's environment rule needs no install to decide.
"""

from __future__ import annotations

from email.parser import Parser
from pathlib import Path

from packaging.requirements import InvalidRequirement, Requirement

from canary.errors import InfrastructureError
from canary.sources.index import IndexSource

# Never read: its wheel is hundreds of MB, and it declares nothing on the HF stack.
OPAQUE = frozenset({"torch"})


def parse_requires(text: str, where: str) -> list[Requirement]:
    """The ``Requires-Dist`` lines of a METADATA text."""
    found = []
    for line in Parser().parsestr(text).get_all("Requires-Dist") or []:
        try:
            found.append(Requirement(line))
        except InvalidRequirement as exc:
            message = f"{where}: unreadable Requires-Dist {line!r}: {exc}"
            raise InfrastructureError(message) from None
    return found


class WheelMetadata:
    """A :data:`canary.runtime.sweepenv.Metadata` over canary's kept wheels; remembers."""

    def __init__(self, wheel_dir: Path, *, offline: bool = False) -> None:
        self.wheel_dir = wheel_dir
        self.offline = offline
        self._seen: dict[tuple[str, str], list[Requirement]] = {}

    def __call__(self, name: str, version: str) -> list[Requirement]:
        if name in OPAQUE:
            return []
        key = (name, version)
        if key not in self._seen:
            source = IndexSource(name, version, wheel_dir=self.wheel_dir, offline=self.offline)
            path = f"{name.replace('-', '_')}-{version}.dist-info/METADATA"
            text = source.fetch([path]).get(path)
            if text is None:
                raise InfrastructureError(f"{name} {version}: its wheel has no {path}")
            self._seen[key] = parse_requires(text.decode("utf-8", "replace"), f"{name} {version}")
        return self._seen[key]
