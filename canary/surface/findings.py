"""Which missing references are held against a project.

A reference is a finding on a release where it is missing, when that release is inside
the project's declared requirement on the package (``Target.requires``: a project that
says ``transformers<4.50`` is not broken by 5.0 removing something) and the miss is not
accepted (``expected_absent`` in its configuration, or a baseline). A package the project
does not declare constrains nothing: it imports it, so every release of it counts.
``unknown`` is never a finding.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from canary import versions
from canary.errors import ConfigError
from canary.surface.model import Outcome, Reference, Resolved, Target

# Operators that exclude every newer release, so ``main`` too.
_UPPER_BOUNDS = ("<", "<=", "==", "===", "~=")

Accepts = Callable[[Reference, str], "str | None"]
"""Why a miss of the reference on that release is accepted, or None (it counts)."""


@dataclass(frozen=True)
class Finding:
    """A reference of ``target`` missing on releases inside its declared range."""

    target: str
    reference: Reference
    missing: Mapping[str, str]  # release -> why, oldest first
    accepted: Mapping[str, str]  # the releases among them whose miss is accepted -> why

    @property
    def new(self) -> tuple[str, ...]:
        """The releases whose miss is not accepted: these fail the run."""
        return tuple(version for version in self.missing if version not in self.accepted)

    @property
    def fails(self) -> bool:
        return bool(self.new)


def findings(
    resolved: Iterable[Resolved], target: Target, *, accepts: Sequence[Accepts] = ()
) -> tuple[Finding, ...]:
    """The findings of ``target`` among ``resolved`` (its own references): one per
    reference missing somewhere inside its range; ``accepts`` are asked in order."""
    ranges: dict[str, SpecifierSet | None] = {}
    found = []
    for item in resolved:
        package = item.reference.package
        if package not in ranges:
            ranges[package] = _declared(target, package)
        missing = {
            version: item.why.get(version, "")
            for version, outcome in item.outcomes.items()
            if outcome is Outcome.MISSING and in_range(version, ranges[package])
        }
        if not missing:
            continue
        accepted = {}
        for version in missing:
            reason = next((r for accept in accepts if (r := accept(item.reference, version))), None)
            if reason:
                accepted[version] = reason
        found.append(Finding(target.name, item.reference, missing, accepted))
    return tuple(found)


def in_range(label: str, declared: SpecifierSet | None) -> bool:
    """Whether the release ``label`` satisfies ``declared`` (None: nothing declared). A
    pre-release or dev release of X counts as X, as everywhere in canary; a tree without a
    release version (``main``) is newer than every release: inside a range with no upper
    bound."""
    if declared is None:
        return True
    version = versions.parse(label)
    if version is None:
        return not any(spec.operator in _UPPER_BOUNDS for spec in declared)
    return declared.contains(versions.release_of(version), prereleases=True)


def _declared(target: Target, package: str) -> SpecifierSet | None:
    spec = target.requires.get(package)
    if spec is None:
        return None
    try:
        return SpecifierSet(spec)
    except InvalidSpecifier:
        raise ConfigError(
            f"{target.name} declares {package}{spec!r}, which is not a PEP 440 specifier; "
            "fix its requirement (e.g. >=4.46,<5)"
        ) from None
