"""Which upstream releases can be installed beside the project: a release whose own
requirement on a dependency leaves no version the project's requirement allows cannot be.

diffusers 0.42.1 requires ``huggingface-hub>=1.32.0``; every transformers 4.x requires
``huggingface-hub<1.0``: pip refuses the pair, and transformers refuses the hub it finds at
import. No user of diffusers has a 4.x, so no miss on a 4.x is anyone's problem.

Two requirements conflict when their specifiers, read as intervals of versions (``>=``,
``>``, ``<``, ``<=``, ``==`` with or without ``.*``, ``~=``), share no version. ``!=`` and
``===`` narrow nothing here: a conflict is only ever claimed where the intervals are
disjoint, so a pair that might be installable is never called a conflict. Only the core
requirements of each side count (no extra's, none for another platform).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from email.parser import HeaderParser

from packaging.markers import UndefinedEnvironmentName
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import InvalidSpecifier, Specifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version


@dataclass(frozen=True)
class Bound:
    """One end of an interval of versions (``version`` None: unbounded)."""

    version: Version | None = None
    inclusive: bool = True


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


def disjoint(first: str, second: str) -> bool:
    """Whether no version satisfies both specifier strings (False where one does not
    parse: nothing is claimed of what is not read)."""
    try:
        specifiers = [*SpecifierSet(first), *SpecifierSet(second)]
    except InvalidSpecifier:
        return False
    lower, upper = Bound(), Bound()
    for specifier in specifiers:
        low, high = _interval(specifier)
        lower, upper = _higher(lower, low), _lower(upper, high)
    if lower.version is None or upper.version is None:
        return False
    if lower.version != upper.version:
        return lower.version > upper.version
    return not (lower.inclusive and upper.inclusive)


def _always(requirement: Requirement) -> bool:
    marker = requirement.marker
    if marker is None:
        return True
    with contextlib.suppress(UndefinedEnvironmentName):
        return bool(marker.evaluate({"extra": ""}))
    return False


def _interval(specifier: Specifier) -> tuple[Bound, Bound]:
    """The versions one specifier admits, as (lower, upper); unbounded where it narrows
    nothing this module reads."""
    operator, text = specifier.operator, specifier.version
    wildcard = text.endswith(".*")
    try:
        version = Version(text[:-2] if wildcard else text)
    except InvalidVersion:
        return Bound(), Bound()
    if operator == "==" and wildcard:  # ==1.2.*: >=1.2, <1.3
        return Bound(version), Bound(_next(version.release), inclusive=False)
    if operator == "~=" and len(version.release) > 1:  # ~=1.4.2: >=1.4.2, <1.5
        return Bound(version), Bound(_next(version.release[:-1]), inclusive=False)
    lower = {">=": Bound(version), ">": Bound(version, inclusive=False), "==": Bound(version)}
    upper = {"<=": Bound(version), "<": Bound(version, inclusive=False), "==": Bound(version)}
    if operator in lower or operator in upper:
        return lower.get(operator, Bound()), upper.get(operator, Bound())
    return Bound(), Bound()  # !=, ===: nothing read


def _next(release: tuple[int, ...]) -> Version:
    return Version(".".join(map(str, (*release[:-1], release[-1] + 1))))


def _higher(a: Bound, b: Bound) -> Bound:
    """The tighter of two lower bounds."""
    if a.version is None or (b.version is not None and b.version > a.version):
        return b
    if b.version == a.version and not b.inclusive:
        return b
    return a


def _lower(a: Bound, b: Bound) -> Bound:
    """The tighter of two upper bounds."""
    if a.version is None or (b.version is not None and b.version < a.version):
        return b
    if b.version == a.version and not b.inclusive:
        return b
    return a
