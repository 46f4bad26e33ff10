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
from canary.symbols.alltext import AllReader, TextAll
from canary.symbols.deftext import top_level_definitions

Loader = Callable[[str], Module | None]
Lister = Callable[[str], Iterable[str] | None]
"""A folder's path in the installed layout ("transformers/models") -> the names of its
entries ("llama", "modeling_llama.py"), None when the caller cannot list it."""
TextReader = Callable[[str], str | None]
"""A path in the installed layout -> the file's text; None when there is no such file, or
the caller would rather its code index answered (it is at hand already)."""


class ModuleFiles:
    """The modules of one package (``import_name`` "transformers"), loaded on demand, each
    at most once; :attr:`paths_read` is every path the loader was asked for."""

    def __init__(
        self,
        import_name: str,
        load: Loader,
        listdir: Lister | None = None,
        read_all: AllReader | None = None,
        read_text: TextReader | None = None,
    ) -> None:
        self.import_name = import_name
        self._load = load
        self._listdir = listdir
        self._read_all = read_all
        self._read_text = read_text
        self._definitions: dict[str, dict[str, str] | None] = {}
        self._loaded: dict[str, Module | None] = {}
        self._listings: dict[str, frozenset[str] | None] = {}
        self._folders: dict[str, list[str] | None] = {}
        self._all_texts: dict[str, TextAll] = {}

    def inside(self, dotted: str) -> bool:
        """Whether ``dotted`` names something in this package."""
        return dotted == self.import_name or dotted.startswith(self.import_name + ".")

    def load(self, path: str) -> Module | None:
        if path not in self._loaded:
            self._loaded[path] = self._load(path)
        return self._loaded[path]

    def module_file(self, dotted: str) -> str | None:
        """``"transformers.trainer"`` -> ``"transformers/trainer.py"``, or the package's
        ``__init__.py``; None when neither file is there (or ``dotted`` is outside).

        Answered from the folder listings where the caller can list them, so no file is
        loaded (a walk over a folder reads only the text of its files, and that a module
        is there says nothing of what it binds); by loading the files otherwise."""
        if not self.inside(dotted) or not all(p.isidentifier() for p in dotted.split(".")):
            return None
        base = dotted.replace(".", "/")
        decided, found = self._listed_file(base)
        if decided:
            return found
        # A package beats a module of the same name, as in Python's path finder.
        for path in (f"{base}/__init__.py", f"{base}.py"):
            if self.load(path) is not None:
                return path
        return None

    def _listed_file(self, base: str) -> tuple[bool, str | None]:
        """``module_file`` from the listings: (False, None) where they cannot say."""
        parent, _, leaf = base.rpartition("/")
        entries = self._listing(parent) if parent else None
        if entries is None:
            return False, None
        if leaf in entries:
            inner = self._listing(base)
            if inner is None:
                return False, None  # a folder it cannot list (an empty one has no __init__)
            if "__init__.py" in inner:
                return True, f"{base}/__init__.py"
        return True, f"{base}.py" if f"{leaf}.py" in entries else None

    def _listing(self, folder: str) -> frozenset[str] | None:
        if folder not in self._listings:
            entries = self._listdir(folder) if self._listdir else None
            self._listings[folder] = frozenset(entries) if entries is not None else None
        return self._listings[folder]

    def read_all_texts(self, paths: Iterable[str]) -> None:
        """Read the ``__all__`` of the files at ``paths`` off their text in one go (what
        :meth:`text_all` answers); nothing without a reader."""
        wanted = sorted({p for p in paths if p not in self._all_texts})
        if self._read_all is None or not wanted:
            return
        found = self._read_all(wanted)
        self._all_texts.update({path: found.get(path) for path in wanted})

    def text_all(self, path: str) -> TextAll:
        """The file's ``__all__`` as :func:`~canary.symbols.alltext.read_all` reads it off
        its text; None where that does not decide it (or there is no reader): the caller
        reads the file's code index instead."""
        if path not in self._all_texts:
            self.read_all_texts([path])
        return self._all_texts.get(path)

    def defined_at_top(self, dotted: str, name: str) -> tuple[str, str] | None:
        """(path, "class" or "def") where the text of module ``dotted`` shows a top-level
        definition of ``name`` (:mod:`canary.symbols.deftext`), read without loading the
        module. None where it does not, or cannot say: no text reader or listing, or
        the module is loaded already (its code index answers as fast)."""
        if self._read_text is None or not self.inside(dotted):
            return None
        decided, path = self._listed_file(dotted.replace(".", "/"))
        if not decided or path is None or path in self._loaded:
            return None
        if path not in self._definitions:
            text = self._read_text(path)
            self._definitions[path] = top_level_definitions(text) if text is not None else None
        kind = (self._definitions[path] or {}).get(name)
        return (path, kind) if kind is not None else None

    def module(self, dotted: str) -> Module | None:
        path = self.module_file(dotted)
        return self.load(path) if path is not None else None

    def folder(self, package: str) -> list[str] | None:
        """The modules and packages in ``package``'s folder (dotted), as transformers'
        ``define_import_structure`` walks it (no conversion scripts or modular sources);
        None when no lister was given or it cannot list the folder."""
        if package not in self._folders:
            entries = self._listing(package.replace(".", "/"))
            self._folders[package] = None if entries is None else _children(package, entries)
        return self._folders[package]

    @property
    def paths_read(self) -> frozenset[str]:
        return frozenset(self._loaded)


def _children(package: str, entries: Iterable[str]) -> list[str]:
    children = []
    for entry in sorted(entries):
        stem = entry.removesuffix(".py")
        if entry in ("__init__.py", "__pycache__") or not stem.isidentifier():
            continue
        if stem.startswith(("convert_", "modular_")):
            continue
        children.append(f"{package}.{stem}")
    return children


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
