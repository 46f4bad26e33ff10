"""A baseline: the findings a project has accepted, so that only new ones fail.

``python -m canary surface TARGET --baseline FILE --update-baseline`` writes every current
finding to FILE (commit it); ``--baseline FILE`` then accepts exactly those misses. A miss
is *new*, and fails, when the reference was not missing on that release when the baseline
was written. A release the baseline never saw (one added to tags.toml since) takes the
state of the nearest older release it saw: a reference known to be gone stays accepted
on the releases that follow, and one that was fine and now breaks is new.

The file is JSON, sorted, one finding per entry, so a change to it reviews as a diff::

    {"canary_surface_baseline": 1,
     "packages": {"transformers": ["4.46.1", ...]},
     "findings": [{"project", "package", "target", "kind", "anchor", "missing": [versions]}]}
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from packaging.version import Version

from canary import versions
from canary.atomic import write_atomically
from canary.errors import ConfigError
from canary.surface.findings import Accepts, Finding
from canary.surface.model import Reference

FORMAT = 1
_MARK = "canary_surface_baseline"

_Entry = tuple[str, tuple[str, str, str, "str | None"]]  # (project, reference key)


@dataclass(frozen=True)
class Baseline:
    """The findings accepted when FILE was written, and the releases checked then."""

    path: Path
    packages: Mapping[str, tuple[str, ...]]  # package -> releases checked, oldest first
    missing: Mapping[_Entry, frozenset[str]]  # (project, reference key) -> releases

    def accepts(self, project: str) -> Accepts:
        """Why a miss of a reference of ``project`` on a release is accepted, or None."""

        def accepted(reference: Reference, label: str) -> str | None:
            known = self.missing.get((project, reference.key))
            if known is None:
                return None
            seen = self._seen_as(reference.package, label)
            if seen is None or seen not in known:
                return None
            return f"in the baseline {self.path} (missing on {seen} when it was written)"

        return accepted

    def stale(self, found: Iterable[Finding]) -> list[_Entry]:
        """Baseline entries no current finding matches (fixed since: drop them with
        ``--update-baseline``)."""
        current = {(f.target, f.reference.key) for f in found if f.missing}
        return sorted((e for e in self.missing if e not in current), key=str)

    def _seen_as(self, package: str, label: str) -> str | None:
        """The release the baseline saw that stands for ``label``: itself, else the
        nearest older one, else the oldest (None: the baseline saw no release of it)."""
        checked = self.packages.get(package, ())
        if not checked:
            return None
        if label in checked:
            return label
        version = versions.parse(label)
        if version is None:  # main or a commit: newer than every release
            return checked[-1]
        older = [v for v in checked if _version(v) <= version]
        return max(older, key=_version) if older else checked[0]


def write_baseline(
    path: Path, packages: Mapping[str, Sequence[str]], found: Iterable[Finding]
) -> int:
    """Write every finding (accepted or not) as the new baseline; one gated away on every
    release it misses (no site runs there) is no miss to accept. Returns the entries."""
    entries = sorted(
        (
            {
                "project": f.target,
                "package": f.reference.package,
                "target": f.reference.target,
                "kind": f.reference.kind.value,
                "anchor": f.reference.anchor,
                "missing": list(f.missing),
            }
            for f in found
            if f.missing
        ),
        key=lambda e: (e["project"], e["package"], e["target"], e["kind"], e["anchor"] or ""),
    )
    data = {
        _MARK: FORMAT,
        "packages": {p: list(v) for p, v in packages.items()},
        "findings": entries,
    }
    write_atomically(path, json.dumps(data, indent=1, sort_keys=True) + "\n")
    return len(entries)


def load_baseline(path: Path) -> Baseline:
    """The baseline at ``path``; a missing or unreadable file is a ConfigError that says
    how to write one."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(
            f"--baseline {path}: no such file; write it with --baseline {path} "
            "--update-baseline (then commit it)"
        ) from None
    except (OSError, ValueError) as exc:
        raise ConfigError(f"--baseline {path}: not readable as JSON ({exc})") from None
    if not isinstance(data, dict) or data.get(_MARK) != FORMAT:
        raise ConfigError(
            f"--baseline {path}: not a canary surface baseline (format {FORMAT}); rewrite it "
            "with --update-baseline"
        )
    try:
        missing = {
            (str(e["project"]), (e["package"], e["target"], e["kind"], e["anchor"])): frozenset(
                e["missing"]
            )
            for e in data["findings"]
        }
        packages = {str(p): tuple(v) for p, v in data["packages"].items()}
    except (KeyError, TypeError, AttributeError) as exc:
        raise ConfigError(
            f"--baseline {path}: an entry lacks {exc}; rewrite it with --update-baseline"
        ) from None
    return Baseline(path, packages, missing)


def _version(label: str) -> Version:
    return versions.parse(label) or Version("0")
