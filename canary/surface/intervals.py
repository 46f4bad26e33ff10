"""Version specifiers read as intervals of versions: whether two share a version, and the
smallest interval holding every version any of several admits.

``>=``, ``>``, ``<``, ``<=``, ``==`` with or without ``.*`` and ``~=`` are read; ``!=`` and
``===`` narrow nothing here, so an interval is never narrower than what its specifier admits.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from packaging.specifiers import InvalidSpecifier, Specifier, SpecifierSet
from packaging.version import InvalidVersion, Version


@dataclass(frozen=True)
class Bound:
    """One end of an interval of versions (``version`` None: unbounded)."""

    version: Version | None = None
    inclusive: bool = True


def interval(specifiers: SpecifierSet) -> tuple[Bound, Bound]:
    """The versions every one of ``specifiers`` admits, as (lower, upper)."""
    lower, upper = Bound(), Bound()
    for specifier in specifiers:
        low, high = _interval(specifier)
        lower, upper = _tighter(lower, low, above=True), _tighter(upper, high, above=False)
    return lower, upper


def disjoint(first: str, second: str) -> bool:
    """Whether no version satisfies both specifier strings (False where one does not
    parse: nothing is claimed of what is not read)."""
    try:
        lower, upper = interval(SpecifierSet(first) & SpecifierSet(second))
    except InvalidSpecifier:
        return False
    if lower.version is None or upper.version is None:
        return False
    if lower.version != upper.version:
        return lower.version > upper.version
    return not (lower.inclusive and upper.inclusive)


def hull(specifiers: Iterable[SpecifierSet]) -> SpecifierSet | None:
    """The smallest interval holding every version one of ``specifiers`` admits (their
    union, or more where they leave a gap), as a specifier; None where it is unbounded
    both ways (it narrows nothing)."""
    intervals = [interval(specifier) for specifier in specifiers]
    if not intervals:
        return None
    lower, upper = intervals[0]
    for low, high in intervals[1:]:
        lower, upper = _looser(lower, low, above=True), _looser(upper, high, above=False)
    if lower.version is None and upper.version is None:
        return None
    if lower == upper and lower.inclusive:
        return SpecifierSet(f"=={lower.version}")
    parts = []
    if lower.version is not None:
        parts.append(f"{'>=' if lower.inclusive else '>'}{lower.version}")
    if upper.version is not None:
        parts.append(f"{'<=' if upper.inclusive else '<'}{upper.version}")
    return SpecifierSet(",".join(parts))


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


def _tighter(a: Bound, b: Bound, *, above: bool) -> Bound:
    """The tighter of two lower bounds (``above``) or of two upper bounds."""
    if a.version is None:
        return b
    if b.version is None:
        return a
    if b.version != a.version:
        return b if (b.version > a.version) == above else a
    return b if not b.inclusive else a


def _looser(a: Bound, b: Bound, *, above: bool) -> Bound:
    """The looser of two lower bounds (``above``) or of two upper bounds."""
    if a.version is None or b.version is None:
        return Bound()
    if b.version != a.version:
        return a if (b.version > a.version) == above else b
    return b if b.inclusive else a
