"""How canary reads, spells and compares versions: the one rule every window, list,
id and report uses.

One version, one spelling: ``5.5.0`` and ``5.05.0`` are one release, one id
(``transformers_5_5_0``), one cache entry, one wheel. ``5.5`` is not a release but a
series: it stands for every listed release it prefixes (5.5.0 ... 5.5.4), as
``-k transformers_5_5`` does for ids.

PEP 440 puts ``2.0.0.dev0`` in neither ``<2.0.0`` nor ``>=2.0.0``, so a check split at
2.0.0 would skip a tree building 2.0.0 in both halves. A branch's tree (``main``, a
commit) almost always declares the *next* version's pre-release, and it is building that
version: so here a pre-release, dev release or local build of X belongs to X. It is
checked with X's shape, inside X's windows, and X's ``broken`` / ``known_drift`` entries
apply to it (loosely: it may not have reached X's drift yet). Post-releases need no rule:
PEP 440 already orders ``X.post1`` after X and before the next release.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from packaging.version import InvalidVersion, Version

__all__ = [
    "Window",
    "canonical_version",
    "is_commit",
    "listed_for",
    "parse",
    "release_of",
    "report_order",
    "requested_releases",
    "within",
]

_COMMIT = re.compile(r"[0-9a-f]{40}")


def is_commit(label: str) -> bool:
    """Whether ``label`` is a full git commit id (40 lowercase hex digits), not a version."""
    return _COMMIT.fullmatch(label) is not None


def parse(text: str | None) -> Version | None:
    """The version ``text`` spells, or None (unreadable, absent, or a commit id)."""
    if text is None or is_commit(text):
        return None
    try:
        return Version(text)
    except InvalidVersion:
        return None


def release_of(version: Version) -> Version:
    """The release ``version`` belongs to: ``2.0.0.dev0``, ``2.0.0rc1``, ``2.0.0+local`` ->
    ``2.0.0``; a release (post-releases included) is its own."""
    if version.is_prerelease or version.local is not None:
        return Version(version.base_version)
    return version


def within(version: Version, since: str | None, until: str | None) -> bool:
    """Whether ``version`` lies in ``[since, until)``, a pre-release counting as its release."""
    release = release_of(version)
    if since is not None and release < Version(since):
        return False
    return until is None or release < Version(until)


@dataclass(frozen=True)
class Window:
    """Releases ``[since, until)`` of one package, as a value a fix can hold and print.

    Membership is :func:`within`'s, so a pre-release or dev build of X (``5.5.4.dev0``, a
    source checkout) is checked as X, like every check window.
    """

    since: str | None = None
    until: str | None = None

    def __post_init__(self) -> None:
        for bound in (self.since, self.until):
            if bound is not None:
                Version(bound)  # InvalidVersion at definition, not at the first lookup

    def contains(self, version: str | Version) -> bool:
        """Whether ``version`` lies in the window (InvalidVersion on a non-version)."""
        parsed = version if isinstance(version, Version) else Version(version)
        return within(parsed, self.since, self.until)

    def __contains__(self, version: str | Version) -> bool:
        return self.contains(version)

    def excludes(self, version: Version | None) -> bool:
        """Whether a case at ``version`` lies outside the window. A tree whose version
        cannot be read (a branch without a literal version) counts as newer than every
        release."""
        if version is None:
            return self.until is not None
        return not self.contains(version)

    def __str__(self) -> str:
        bounds = [f">={self.since}"] if self.since else []
        bounds += [f"<{self.until}"] if self.until else []
        return ",".join(bounds) or "every release"


@dataclass(frozen=True)
class Windows:
    """Several :class:`Window` s of one package: a behaviour releases had, lost, and had
    again (4.47.0 and 4.48.0 withhold a count 4.47.1 passes)."""

    parts: tuple[Window, ...]

    def contains(self, version: str | Version) -> bool:
        """Whether ``version`` lies in one of the windows."""
        return any(part.contains(version) for part in self.parts)

    def __contains__(self, version: str | Version) -> bool:
        return self.contains(version)

    def __str__(self) -> str:
        return " or ".join(map(str, self.parts)) or "no release"


def listed_for(listed: Mapping[str, str], label: str, version: Version | None) -> tuple[str, bool]:
    """The entry of a version-keyed list (``broken``, ``known_drift``) that applies to a case.

    Returns ``(reason, exact)``: ``exact`` when the case is that release itself, False
    when it is a pre-release of it (whose tree may or may not carry the release's
    problem yet); ``("", False)`` when nothing applies.
    """
    if label in listed:
        return listed[label], True
    if version is None:
        return "", False
    release = release_of(version)
    for entry, reason in listed.items():
        if (entry_version := parse(entry)) is None:
            continue
        if entry_version == version:
            return reason, True
        if release != version and entry_version == release:
            return reason, False
    return "", False


def report_order(label: str, version: str | None) -> tuple[int, Version]:
    """Sort key of a report column: releases in version order, then branch trees (``main``,
    a commit) after every release whatever version they declare, ordered among themselves
    by that version."""
    if (parsed := parse(label)) is not None:
        return (0, parsed)
    return (1, parse(version) or Version("0"))


# Releases of the packages canary checks have three numbers; fewer name a series.
_RELEASE_PARTS = 3


def canonical_version(text: str) -> str:
    """The one spelling of a version (raises InvalidVersion on a non-version)."""
    return str(Version(text))


def requested_releases(text: str, listed: Sequence[str]) -> list[str]:
    """The releases ``PKG=TEXT`` asks for, in their listed spelling.

    A series (``5.5``: fewer than three numbers, no pre/post/dev part) is every listed
    release it prefixes, none if it prefixes none; anything else is one version: the listed
    release equal to it, else its canonical spelling (a release tags.toml does not list
    yet, as ``tags --new`` prints). Raises InvalidVersion on a non-version.
    """
    version = Version(text)
    series = (
        len(version.release) < _RELEASE_PARTS
        and version.pre is None
        and version.post is None
        and version.dev is None
        and version.local is None
    )
    if series:
        depth = len(version.release)
        return [
            release for release in listed if Version(release).release[:depth] == version.release
        ]
    for release in listed:
        if Version(release) == version:
            return [release]
    return [str(version)]
