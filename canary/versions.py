"""Version strings as canary compares and names them: one version, one spelling.

``5.5.0`` and ``5.05.0`` are one release: one id (``transformers_5_5_0``), one cache entry,
one wheel. ``5.5`` is not a release but a series: it stands for every listed release it
prefixes (5.5.0 ... 5.5.4), as ``-k transformers_5_5`` does for ids.
"""

from __future__ import annotations

from collections.abc import Sequence

from packaging.version import Version

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
