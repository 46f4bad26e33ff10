"""One exact release, ``NAME==VERSION``: a package name and one version, checked before pip,
the cache or the file system sees either (a URL, a path, an option or extras never pass).

Both parts are also safe as one path component each: a name has no separator and never
starts with a dot, a version has no separator (``../x`` fails both).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from packaging.version import InvalidVersion, Version

from canary.errors import ConfigError

# PEP 508's name, as the package index accepts it.
_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?")
# The characters a PEP 440 version can be written with; Version() then decides.
_VERSION = re.compile(r"[A-Za-z0-9][A-Za-z0-9.!+_-]*")
EXAMPLE = "unsloth==2025.1.1"


@dataclass(frozen=True)
class Pin:
    name: str
    version: str

    @property
    def requirement(self) -> str:
        return f"{self.name}=={self.version}"


def problem(name: str, version: str) -> str | None:
    """Why ``name``/``version`` is not one package and one exact version; None if it is."""
    if not _NAME.fullmatch(name):
        return f"{name!r} is not a package name (letters, digits, '.', '_', '-')"
    if not _VERSION.fullmatch(version):
        return f"{version!r} is not one exact version"
    try:
        Version(version)
    except InvalidVersion:
        return f"{version!r} is not one exact version"
    return None


def parse_pin(spec: str) -> Pin:
    """``spec`` as ``NAME==VERSION``; anything else is a :class:`ConfigError` naming it."""
    name, separator, version = spec.partition("==")
    why = problem(name, version) if separator else "no '=='"
    if why is not None:
        raise ConfigError(
            f"target {spec!r}: {why}; write NAME==VERSION, a package name and one exact "
            f"release (e.g. {EXAMPLE}): URLs, paths, options and extras are not targets"
        )
    return Pin(name, version)
