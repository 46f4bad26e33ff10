"""Which upstream releases can be installed beside the project: a release whose own
requirement on a dependency leaves no version the project's requirement allows cannot be.

diffusers 0.42.1 requires ``huggingface-hub>=1.32.0``; every transformers 4.x requires
``huggingface-hub<1.0``: pip refuses the pair, and transformers refuses the hub it finds at
import. No user of diffusers has a 4.x, so no miss on a 4.x is anyone's problem.

Two requirements conflict when their specifiers, read as intervals of versions
(:mod:`canary.surface.intervals`), share no version: a conflict is only ever claimed where
the intervals are disjoint, so a pair that might be installable is never called a conflict.
Only the core requirements of each side count (no extra's, none for another platform).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping
from email.parser import HeaderParser

from packaging.markers import UndefinedEnvironmentName
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

from canary.surface.intervals import disjoint


def core_requirements(lines: Iterable[str]) -> dict[str, str]:
    """Each dependency the requirement ``lines`` (``Requires-Dist``) always apply to this
    install, canonical name -> its specifiers joined (those with none left out)."""
    joined: dict[str, SpecifierSet] = {}
    for line in lines:
        try:
            requirement = Requirement(line)
        except InvalidRequirement:
            continue  # says nothing this module could read
        if not _always(requirement) or not requirement.specifier:
            continue
        name = canonicalize_name(requirement.name)
        joined[name] = joined.get(name, SpecifierSet()) & requirement.specifier
    return {name: str(specifier) for name, specifier in sorted(joined.items())}


def metadata_requirements(metadata: str) -> dict[str, str]:
    """:func:`core_requirements` of a ``METADATA`` file's ``Requires-Dist`` headers."""
    return core_requirements(HeaderParser().parsestr(metadata).get_all("Requires-Dist") or [])


def conflict(project: Mapping[str, str], release: Mapping[str, str]) -> str | None:
    """The first dependency both require that no version satisfies for both, said as
    ``"huggingface-hub: >=1.32.0 against <1.0,>=0.34.0"`` (project's, release's); None if
    every shared one may be satisfied."""
    for name in sorted(project.keys() & release.keys()):
        if disjoint(project[name], release[name]):
            return f"{name}: {project[name]} against {release[name]}"
    return None


def _always(requirement: Requirement) -> bool:
    marker = requirement.marker
    if marker is None:
        return True
    with contextlib.suppress(UndefinedEnvironmentName):
        return bool(marker.evaluate({"extra": ""}))
    return False
