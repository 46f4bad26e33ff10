"""What a fix is: a patch that depends on upstream internals, named by the checks that
protect it. A leaf module: the registry and the downstream table both build on it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from packaging.version import Version

from canary.versions import Window


@dataclass(frozen=True)
class Fix:
    """A patch that depends on upstream internals, named by checks that protect it.

    ``windows`` (this package's fixes): per upstream package, the releases the fix
    supports; the static tier checks the fix's own surface there, and an upstream package
    the fix's code uses without a window is a finding.
    ``upstream`` (downstream patches): what the patch uses upstream, as
    ``module:qualname`` (``transformers.cache_utils:DynamicCache``; a module
    alone for a whole module), so ``surface --stale`` can tell an entry whose project no
    longer uses any of it.
    """

    name: str
    summary: str
    module: str | None = None  # the module in this package; None for a downstream patch
    reference: str | None = None  # where a downstream patch lives: "unsloth-zoo#549"
    windows: Mapping[str, Window] = field(default_factory=dict, hash=False)
    upstream: tuple[str, ...] = ()

    @property
    def kind(self) -> str:
        return "fix" if self.module is not None else "downstream patch"

    @property
    def path(self) -> str | None:
        """The fix's module as a file under the source root: ``canary/fixes/x.py``."""
        return f"{self.module.replace('.', '/')}.py" if self.module else None

    def window(self, package: str) -> Window | None:
        """The releases of ``package`` this fix supports; None where it declares none."""
        return self.windows.get(package)

    def supports(self, package: str, version: Version | None) -> bool:
        """Whether ``version`` of ``package`` is inside this fix's window (a pre-release
        counts as its release; None, a tree with no release version such as ``main``, is
        newer than every release)."""
        window = self.window(package)
        if window is None:
            return False
        return window.until is None if version is None else window.contains(version)

    def __str__(self) -> str:
        where = f" ({self.reference})" if self.reference else ""
        return f"{self.kind} {self.name!r}{where}"
