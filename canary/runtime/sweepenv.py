"""The behaviour sweep's environment rule: for one release of a swept package, which pin
set it borrows and which companion versions install beside it (written down in docs/sweep.md).

1. The *base* is the ``[runtime]`` pin set whose pin of the swept package is nearest the
   release in tags.toml's release order (tags.toml holds no dates; its order is release
   order); a tie goes to the set pinned at or below the release.
2. The swept package is swapped to the release. Every other pinned package (a *companion*)
   keeps the base's pin when the declared requirements (``Requires-Dist`` without extras)
   of both sides accept each other (plus the :data:`UNDECLARED` ones the sweep found);
   otherwise it becomes the version of it pinned in *any*
   set that does and is nearest the base's pin (the newer on a tie), checked against the
   release and the companions decided so far (in name order). Where none does, an
   :data:`OPTIONAL` companion is left out (its tests skip, saying why); any other means
   the release has no environment, and says why.

Only the swept package and swapped companions differ from the base set's environment:
they are pure Python, so the sweep installs them into a per-release overlay on top of the
base venv (:mod:`canary.runtime.overlay`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import Version

from canary.errors import ConfigError
from canary.runtime.pins import PinSet

# Companions a release may run without: only the tests that import them need them, and
# those skip with the reason (the overlay hides the base's copy).
OPTIONAL = frozenset({"trl"})

# (distribution, version) -> its declared requirements, all of them (markers unevaluated).
Metadata = Callable[[str, str], Sequence[Requirement]]

# Requirements a release has but does not declare, each found by the sweep and read in the
# wheels: (distribution, its versions) -> what they need. The rule adds them to the declared.
UNDECLARED: dict[tuple[str, str], tuple[str, ...]] = {
    # peft 0.17.x peft_model.py:37 imports transformers.HybridCache, which transformers 5.0.0
    # removed (its __init__ no longer names it); peft 0.18.0 stopped importing it. peft
    # declares transformers without an upper bound.
    ("peft", "<0.18.0"): ("transformers<5.0.0",),
}


def with_undeclared(metadata: Metadata) -> Metadata:
    """``metadata`` plus :data:`UNDECLARED`: what the environment rule reads."""

    def requirements(name: str, version: str) -> list[Requirement]:
        found = list(metadata(name, version))
        for (known, versions), extra in UNDECLARED.items():
            if known == name and SpecifierSet(versions).contains(version, prereleases=True):
                found.extend(Requirement(line) for line in extra)
        return found

    return requirements


@dataclass(frozen=True)
class Environment:
    """Where one release of the swept package runs."""

    package: str
    release: str
    base: PinSet
    pins: Mapping[str, str]  # the full stack: the base's pins, swept and swapped
    swapped: Mapping[str, tuple[str, str]] = field(default_factory=dict)  # name -> (base, now)
    problem: str | None = None  # why no environment exists; pins are then the base's
    left_out: Mapping[str, str] = field(default_factory=dict)  # name -> why (OPTIONAL only)

    @property
    def overlay(self) -> dict[str, str]:
        """What differs from the base venv: the release and any swapped companions."""
        found = {self.package: self.release}
        found.update({name: new for name, (_, new) in self.swapped.items()})
        return dict(sorted(found.items()))

    @property
    def case_id(self) -> str:
        """The parametrized id of this release: ``transformers_4_57_6``."""
        return f"{self.package}_{self.release.replace('.', '_')}"

    def line(self) -> str:
        """One ``--list`` line."""
        head = f"{self.package} {self.release}: base {self.base.name}"
        if self.problem:
            return f"{head}, NO ENVIRONMENT: {self.problem}"
        swaps = ", ".join(f"{n} {old} -> {new}" for n, (old, new) in self.swapped.items())
        stack = " ".join(f"{n}=={v}" for n, v in self.pins.items() if n != self.package)
        out = "".join(f"; without {name}: {why}" for name, why in self.left_out.items())
        return f"{head}{f' (swapped {swaps})' if swaps else ''}; {stack}{out}"


def applies(requirement: Requirement) -> bool:
    """Whether a declared requirement binds a plain install (no extras) on this Python."""
    if requirement.marker is None:
        return True
    return requirement.marker.evaluate({"extra": ""})


def accepts(metadata: Metadata, name: str, version: str, other: str, other_version: str) -> bool:
    """Whether ``name==version`` declares nothing against ``other==other_version``."""
    wanted = canonicalize_name(other)
    for requirement in metadata(name, version):
        if (
            canonicalize_name(requirement.name) == wanted
            and applies(requirement)
            and not requirement.specifier.contains(other_version, prereleases=True)
        ):
            return False
    return True


def compatible(metadata: Metadata, a: str, a_version: str, b: str, b_version: str) -> bool:
    """Both directions of :func:`accepts`."""
    return accepts(metadata, a, a_version, b, b_version) and accepts(
        metadata, b, b_version, a, a_version
    )


def nearest_set(
    package: str, release: str, sets: Sequence[PinSet], releases: Sequence[str] = ()
) -> PinSet:
    """The set whose pin of ``package`` is nearest ``release``, counted in releases of
    ``releases`` (tags.toml's list); a tie goes to the set at or below it (the later-listed
    set among equal pins)."""
    pinned = [s for s in sets if package in s.pins]
    if not pinned:
        raise ConfigError(f"no [runtime] pin set pins {package}; add one to tags.toml")
    known = (*releases, release, *(s.pins[package] for s in pinned))
    order = sorted({Version(v) for v in known})
    where = {v: i for i, v in enumerate(order)}
    target = where[Version(release)]

    def key(pin_set: PinSet) -> tuple[int, int]:
        at = where[Version(pin_set.pins[package])]
        return (abs(at - target), 0 if at <= target else 1)

    return min(reversed(pinned), key=key)


def environment_for(
    package: str,
    release: str,
    sets: Sequence[PinSet],
    metadata: Metadata,
    releases: Sequence[str] = (),
) -> Environment:
    """The environment rule (module docstring) for one release of ``package``, whose
    releases (tags.toml's list) are ``releases``."""
    package = canonicalize_name(package)
    metadata = with_undeclared(metadata)
    base = nearest_set(package, release, sets, releases)
    stack = {**base.pins, package: release}
    swapped: dict[str, tuple[str, str]] = {}
    left_out: dict[str, str] = {}
    decided = {package: release}
    for name in sorted(n for n in base.pins if n != package):
        candidates = _nearest_first(base.pins[name], {s.pins[name] for s in sets if name in s.pins})
        chosen = next(
            (
                v
                for v in candidates
                if all(compatible(metadata, name, v, n, w) for n, w in decided.items())
            ),
            None,
        )
        if chosen is None and name in OPTIONAL:
            left_out[name] = (
                f"no pinned {name} ({', '.join(candidates)}) accepts {package} {release}"
            )
            continue
        if chosen is None:
            problem = (
                f"no pinned {name} ({', '.join(candidates)}) and {package} {release} "
                f"accept each other with {_stack(decided)}"
            )
            return Environment(package, release, base, dict(base.pins), {}, problem)
        decided[name] = chosen
        if chosen != base.pins[name]:
            swapped[name] = (base.pins[name], chosen)
            stack[name] = chosen
    for name in left_out:
        del stack[name]
    return Environment(
        package, release, base, dict(sorted(stack.items())), swapped, left_out=left_out
    )


def _nearest_first(pin: str, pinned: set[str]) -> list[str]:
    """``pinned`` ordered by distance from ``pin`` among them, the newer first on a tie."""
    order = sorted(pinned | {pin}, key=Version)
    at = order.index(pin)
    return sorted(order, key=lambda v: (abs(order.index(v) - at), -order.index(v)))


def _stack(decided: Mapping[str, str]) -> str:
    return " ".join(f"{n}=={v}" for n, v in decided.items())
