"""Where a module of one package lives, and reading it once through the caller's loader.

The package is read through a :data:`Loader`: a path in the installed layout
(``"transformers/trainer.py"``) to its code index, ``None`` when there is no such file.
Nothing here knows where files come from (a wheel, the cache, a local tree); what the
loader raises (a file that does not parse, a fetch that failed) reaches the caller as it
is: nothing was decided, which is neither found nor missing.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

from canary.codeindex import Module

Loader = Callable[[str], Module | None]
Lister = Callable[[str], Iterable[str] | None]
"""A folder's path in the installed layout ("transformers/models") -> the names of its
entries ("llama", "modeling_llama.py"), None when the caller cannot list it."""


class ModuleFiles:
    """The modules of one package (``import_name`` "transformers"), loaded on demand, each
    at most once; :attr:`paths_read` is every path the loader was asked for."""

    def __init__(self, import_name: str, load: Loader, listdir: Lister | None = None) -> None:
        self.import_name = import_name
        self._load = load
        self._listdir = listdir
        self._loaded: dict[str, Module | None] = {}

    def inside(self, dotted: str) -> bool:
        """Whether ``dotted`` names something in this package."""
        return dotted == self.import_name or dotted.startswith(self.import_name + ".")

    def load(self, path: str) -> Module | None:
        if path not in self._loaded:
            self._loaded[path] = self._load(path)
        return self._loaded[path]

    def module_file(self, dotted: str) -> str | None:
        """``"transformers.trainer"`` -> ``"transformers/trainer.py"``, or the package's
        ``__init__.py``; None when neither file is there (or ``dotted`` is outside)."""
        if not self.inside(dotted) or not all(p.isidentifier() for p in dotted.split(".")):
            return None
        base = dotted.replace(".", "/")
        # A package beats a module of the same name, as in Python's path finder.
        for path in (f"{base}/__init__.py", f"{base}.py"):
            if self.load(path) is not None:
                return path
        return None

    def module(self, dotted: str) -> Module | None:
        path = self.module_file(dotted)
        return self.load(path) if path is not None else None

    def folder(self, package: str) -> list[str] | None:
        """The modules and packages in ``package``'s folder (dotted), as transformers'
        ``define_import_structure`` walks it (no conversion scripts or modular sources);
        None when no lister was given or it cannot list the folder."""
        entries = self._listdir(package.replace(".", "/")) if self._listdir else None
        if entries is None:
            return None
        children = []
        for entry in sorted(entries):
            stem = entry.removesuffix(".py")
            if entry in ("__init__.py", "__pycache__") or not stem.isidentifier():
                continue
            if stem.startswith(("convert_", "modular_")):
                continue
            children.append(f"{package}.{stem}")
        return children

    @property
    def paths_read(self) -> frozenset[str]:
        return frozenset(self._loaded)


def dotted_of(path: str) -> str:
    """``"transformers/models/__init__.py"`` -> ``"transformers.models"``."""
    stem = path.removesuffix(".py").removesuffix("/__init__")
    return stem.replace("/", ".")


def package_of(path: str) -> str:
    """The package relative imports in ``path`` start from: the module itself for an
    ``__init__.py``, else its parent."""
    dotted = dotted_of(path)
    return dotted if path.endswith("/__init__.py") else dotted.rpartition(".")[0]


def absolute(module: str, path: str) -> str | None:
    """The absolute name of an import's module as written in ``path`` (``"..utils"`` ->
    ``"transformers.utils"``); None when the dots climb above the top-level package."""
    level = len(module) - len(module.lstrip("."))
    if level == 0:
        return module
    parts = package_of(path).split(".")
    if level - 1 >= len(parts):
        return None
    base = ".".join(parts[: len(parts) - (level - 1)])
    rest = module[level:]
    return f"{base}.{rest}" if rest else base
