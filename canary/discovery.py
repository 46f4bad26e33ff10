"""Releases newer than a tags.toml lists, found on the package index at run time.

An installed canary ships the release lists of its build; the surface asks the index for
the stable releases that came out since, so a release of this morning is checked without
upgrading canary. A package the user pinned (``--tags``, ``[tool.canary.surface] tags``)
is not looked up: its list is the one given.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace

from packaging.version import Version

from canary.errors import CanaryError
from canary.tags import SHIPPED_TAGS, PackageTags, Tags, stable_releases

Lister = Callable[[str, Version], list[str]]  # (package, floor) -> stable releases, oldest first


@dataclass(frozen=True)
class Releases:
    """The releases a run checks: tags.toml's lists, and what the index added to them."""

    tags: Tags  # the lists, with the discovered releases appended
    discovered: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    failed: Mapping[str, str] = field(default_factory=dict)  # package -> why it was not asked
    looked_up: bool = False  # whether the index was asked at all

    def listed(self, package: str) -> tuple[str, ...]:
        """The releases of ``package`` that tags.toml itself lists."""
        new = set(self.discovered.get(package, ()))
        return tuple(v for v in self.tags.package(package).versions if v not in new)

    def describe(self) -> str:
        """One line: where the releases came from (for the report and stderr)."""
        found = "; ".join(
            f"{package} {', '.join(versions)}"
            for package, versions in self.discovered.items()
            if versions
        )
        where = "canary's own list" if self.tags.path == SHIPPED_TAGS else str(self.tags.path)
        if not self.looked_up:
            return f"releases: listed in {where} (the index was not asked for newer ones)"
        return f"releases: listed in {where}; " + (
            f"discovered on the package index: {found}"
            if found
            else "none newer on the package index"
        )


def listed_only(tags: Tags) -> Releases:
    """The lists as they are: nothing asked of the index."""
    return Releases(tags)


def discover(
    tags: Tags, *, pinned: Collection[str] = (), lister: Lister = stable_releases
) -> Releases:
    """``tags`` with every stable release newer than each package's newest listed one
    appended, for the packages not in ``pinned``. A package whose releases cannot be
    listed keeps its list and is named in ``failed``: the run then checked less than the
    index has, which the caller reports as not everything checked."""
    asked = [name for name in tags.packages if name not in pinned]
    with ThreadPoolExecutor(max_workers=max(1, len(asked))) as pool:
        answers = dict(
            zip(asked, pool.map(lambda name: _newer(tags, name, lister), asked), strict=True)
        )
    packages: dict[str, PackageTags] = dict(tags.packages)
    discovered: dict[str, tuple[str, ...]] = {}
    failed: dict[str, str] = {}
    for name, answer in answers.items():
        if isinstance(answer, str):
            failed[name] = answer
            continue
        discovered[name] = answer
        if answer:
            packages[name] = replace(packages[name], versions=(*packages[name].versions, *answer))
    return Releases(replace(tags, packages=packages), discovered, failed, looked_up=True)


def _newer(tags: Tags, name: str, lister: Lister) -> tuple[str, ...] | str:
    """The stable releases above the newest listed, oldest first; or why there are none."""
    package = tags.package(name)
    newest = max(Version(v) for v in package.versions)
    try:
        found = lister(name, package.floor)
    except CanaryError as exc:
        return str(exc)
    return tuple(v for v in found if Version(v) > newest)
