"""What a fix is: a patch that depends on upstream internals, named by the checks that
protect it. A leaf module: the registry and the downstream table both build on it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from canary.versions import release_of


@dataclass(frozen=True)
class Fix:
    """A patch that depends on upstream internals, named by checks that protect it.

    ``windows`` (this package's fixes): per upstream package, the releases the fix
    supports, as a PEP 440 specifier; the static tier checks the fix's own surface there,
    and an upstream package the fix's code uses without a window is a finding.
    ``upstream`` (downstream patches): what the patch uses upstream, as
    ``module:qualname`` (``transformers.utils.hub:PushToHubMixin._create_repo``; a module
    alone for a whole module), so ``surface --stale`` can tell an entry whose project no
    longer uses any of it.
    """

    name: str
    summary: str
    module: str | None = None  # the module in this package; None for a downstream patch
    reference: str | None = None  # where a downstream patch lives: "unsloth-zoo#549"
    windows: Mapping[str, str] = field(default_factory=dict, hash=False)
    upstream: tuple[str, ...] = ()

    @property
    def kind(self) -> str:
        return "fix" if self.module is not None else "downstream patch"

    @property
    def path(self) -> str | None:
        """The fix's module as a file under the source root: ``canary/fixes/x.py``."""
        return f"{self.module.replace('.', '/')}.py" if self.module else None

    def window(self, package: str) -> SpecifierSet | None:
        """The releases of ``package`` this fix supports; None where it declares none."""
        text = self.windows.get(package)
        return SpecifierSet(text) if text is not None else None

    def supports(self, package: str, version: Version) -> bool:
        """Whether ``version`` of ``package`` is inside this fix's window (a pre-release
        counts as the release it leads to, as in every window of canary)."""
        window = self.window(package)
        return window is not None and window.contains(release_of(version))

    def __str__(self) -> str:
        where = f" ({self.reference})" if self.reference else ""
        return f"{self.kind} {self.name!r}{where}"
