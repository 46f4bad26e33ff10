"""Fakes for the surface tests: a package tree with the lookup resolution relies on, and
a workspace over small in-memory trees, one per release."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from canary import codeindex
from canary.cache import Cache
from canary.errors import Drift, FetchError
from canary.workspace import Case, FetchPolicy, Workspace


@dataclass
class FakeLookup:
    found: bool | None
    path: str | None = None
    qualname: str | None = None
    kind: str | None = None
    why: str = ""
    function: codeindex.Function | None = None
    cls: codeindex.Class | None = None


class FakeTree:
    """The part of canary.symbols.PackageTree resolution relies on: a dotted name's module
    is its longest prefix that is a file; the rest is a qualname in it, or leaves the
    package through a name the module imports (unknown)."""

    lookups: list[str]  # shared by every tree of a test: how many lookups really ran
    follows = False  # whether a name re-exported from inside the package is followed

    def __init__(self, import_name: str, load) -> None:
        self.import_name = import_name
        self.load = load

    def star_exports(self, dotted: str) -> frozenset[str] | None:
        return None  # a fake module lists no __all__: a star import takes its public names

    def lookup(  # noqa: PLR0911
        self, dotted: str, *, bound_only: bool = False, imported: bool = False
    ) -> FakeLookup:
        # bound_only: the real tree may skip parsing; a fake has nothing to skip. imported:
        # a fake's modules are never also attributes of another kind.
        FakeTree.lookups.append(dotted)
        parts = dotted.split(".")
        for cut in range(len(parts), 0, -1):
            stem = "/".join(parts[:cut])
            for path in (f"{stem}.py", f"{stem}/__init__.py"):
                module = self.load(path)
                if module is None:
                    continue
                rest = parts[cut:]
                if not rest:
                    return FakeLookup(True, path, None, "module")
                imported = module.imports.get(rest[0])
                if imported is not None and imported.module == "torch":
                    return FakeLookup(None, path, rest[0], why=f"{rest[0]} leaves {stem}")
                if (
                    self.follows
                    and imported is not None
                    and (imported.module or "").startswith(".")
                ):
                    # a re-export inside the package: followed (absolute, one level up)
                    source = imported.module.lstrip(".").split(".")
                    return self.lookup(".".join([parts[0], *source, imported.imported, *rest[1:]]))
                try:
                    found = module.find(".".join(rest))
                except Drift as exc:
                    return FakeLookup(False, path, ".".join(rest), why=str(exc))
                if isinstance(found, codeindex.Function):
                    return FakeLookup(True, path, found.qualname, "function", function=found)
                return FakeLookup(True, path, found.qualname, "class", cls=found)
        return FakeLookup(False, why=f"no module for {dotted}")


class ReexportingTree(FakeTree):
    """A fake tree that follows ``from .models.x.modeling_x import X`` re-exports."""

    follows = True


class Source:
    def __init__(self, case: Case, trees: dict[str, dict[str, bytes]], failing: set[str]):
        self.package, self.ref = case.package, case.label
        self.files = trees[case.label]
        self.failing = failing
        self.requests: list[tuple[str, ...]] = []

    @property
    def description(self) -> str:
        return f"{self.package} {self.ref} from the test"

    def fetch(self, paths: Sequence[str]) -> dict[str, bytes | None]:
        self.requests.append(tuple(paths))
        if self.ref in self.failing:
            raise FetchError(f"{self.description}: connection reset")
        return {path: self.files.get(path) for path in paths}


def workspace(tmp_path, trees, failing=()) -> Workspace:
    return Workspace(
        lambda case: Source(case, trees, set(failing)),
        Cache(tmp_path / "cache"),
        FetchPolicy(),
        parse_processes=0,
    )


def moved_class_trees(*layouts: str) -> dict[str, dict[str, bytes]]:
    """One release per layout of ``toy``'s ``BTrainer`` as upstream moved it, its ``train``
    saying ``step()`` where it lives: "old" (in ``toy.trainer.bt``), "shim" (there, a
    subclass of the one in ``toy.exp.bt`` overriding ``train`` with a warning), "new"
    (``toy.exp.bt`` only), "gone" (neither); labels are 1.0, 2.0, ... in order."""
    real = b"class BTrainer:\n    def train(self):\n        step()\n"
    shim = (
        b"from toy.exp.bt import BTrainer as _BTrainer\n\n\n"
        b"class BTrainer(_BTrainer):\n    def train(self):\n        warn()\n"
        b"        super().train()\n"
    )
    files = {
        "old": {"toy/trainer/bt.py": real},
        "shim": {"toy/trainer/bt.py": shim, "toy/exp/__init__.py": b"", "toy/exp/bt.py": real},
        "new": {"toy/exp/__init__.py": b"", "toy/exp/bt.py": real},
        "gone": {},
    }
    base = {"toy/__init__.py": b"", "toy/trainer/__init__.py": b""}
    return {f"{i}.0": {**base, **files[layout]} for i, layout in enumerate(layouts, start=1)}


def project_surface(tmp_path, files: dict[str, str], upstream=("transformers", "trl", "peft")):
    """The references extraction finds in a project tree of ``files`` (path -> source,
    dedented), written under ``tmp_path``."""
    import textwrap

    from canary.surface.extract import extract

    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return extract(tmp_path, sorted(files), upstream=upstream)
