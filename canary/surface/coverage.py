"""The catalog against a project's surface: what no hand-written check reads
(``surface --uncovered``), and downstream entries the project no longer needs
(``surface --stale``).

What a check *reads*, decided statically from the catalog (no check runs, nothing is
fetched): the files it declares (``reads=``, a table row's files) and the names it looks
up, which are the identifiers in its string literals (``"Trainer"``,
``"Trainer.compute_loss"``), in the module constants it names, in the module-level
helpers it calls (transitively) and, for a table row, in the row's values. A reference
``pkg.mod.Class.member`` is covered by a check that reads ``pkg/mod.py`` (or
``pkg/mod/__init__.py``) and names every part after the module (``Class`` and
``member``); a reference to the module itself, by any check reading it. An anchor (a text
a project looks for in a function) is covered only where such a check also names a
fragment of that text: a check that looks at a function's signature does not protect the
text inside it. A name re-exported elsewhere (``transformers.Trainer``) is matched where
it is defined when the caller can say where (``defined_at``, from resolution); otherwise it
counts as uncovered: this is a to-do list, and the safe mistake is listing too much.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import Any

import canary.checks
from canary.catalog import CheckSpec, CheckTable
from canary.fixes import Fix
from canary.fixes.downstream import DOWNSTREAM_PATCHES
from canary.surface.model import Kind, Reference

_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_FRAGMENT = 4  # shortest literal that counts as naming a fragment of an anchor's text


@dataclass(frozen=True)
class CheckReads:
    """What one catalog check reads: its package, files and the names it looks up."""

    test: str
    package: str
    files: tuple[str, ...]
    names: frozenset[str]
    texts: frozenset[str]  # its string literals as written (for anchors)

    def covers(self, reference: Reference, dotted: str) -> bool:
        """Whether this check reads ``dotted`` (the reference's target, or where it is
        defined): a file it reads is that module, or holds the rest of the path by name."""
        if reference.package != self.package:
            return False
        return any(self._reads(reference, dotted, module_of(path)) for path in self.files)

    def _reads(self, reference: Reference, dotted: str, module: str) -> bool:
        if reference.kind is Kind.ANCHOR and not self._names_text(reference.anchor):
            return False
        if dotted == module:
            return True
        rest = dotted.removeprefix(f"{module}.")
        return rest != dotted and set(rest.split(".")) <= self.names

    def _names_text(self, anchor: str | None) -> bool:
        return anchor is not None and any(
            len(text) >= _FRAGMENT and text in anchor for text in self.texts
        )


def module_of(path: str) -> str:
    """``transformers/trainer.py`` -> ``transformers.trainer``; a package's ``__init__.py``
    is the package."""
    dotted = path.removesuffix(".py").replace("/", ".")
    return dotted.removesuffix(".__init__")


def catalog_reads(modules: Iterable[ModuleType]) -> list[CheckReads]:
    """What every check of these catalog modules reads (each module says its package with
    ``pytestmark = pytest.mark.upstream(...)``)."""
    found: list[CheckReads] = []
    for module in modules:
        package = _package_of(module)
        if package is None:
            raise ValueError(f"{module.__name__} does not say which package it checks")
        source = _ModuleSource(Path(module.__file__ or ""))
        for name, obj in vars(module).items():
            if isinstance(obj, CheckTable):
                body = source.names_in(obj.body.__name__)
                for test, function in obj.checks():
                    spec = _spec(function)
                    row = next(r for r in obj.rows if r.test == test)
                    values = set(_strings(row.values.values()))
                    found.append(_reads(test, package, spec, body, values))
            elif (spec := _spec(obj)) is not None and name.startswith("test_"):
                found.append(_reads(name, package, spec, source.names_in(name), set()))
    return found


def shipped_catalog() -> list[ModuleType]:
    """canary's own catalog modules: those of ``canary/checks/`` that check an upstream
    package (the surface module there reads no file of its own)."""
    modules = [
        importlib.import_module(f"canary.checks.{info.name}")
        for info in pkgutil.iter_modules(canary.checks.__path__)
        if info.name.startswith("test_")
    ]
    return [module for module in modules if _package_of(module) is not None]


def uncovered(
    references: Iterable[Reference],
    reads: Sequence[CheckReads],
    *,
    defined_at: Callable[[Reference], str | None] | None = None,
) -> list[Reference]:
    """The private or patched references (:attr:`Reference.private`) no check reads;
    ``defined_at`` may say where a re-exported name is defined (dotted)."""
    missing = []
    for reference in references:
        if not reference.private:
            continue
        spellings = {reference.target}
        if defined_at is not None and (defined := defined_at(reference)):
            spellings.add(defined)
        if not any(check.covers(reference, dotted) for check in reads for dotted in spellings):
            missing.append(reference)
    return missing


def render_uncovered(found: Sequence[Reference], private: int) -> str:
    """The to-do list for the catalog, by package and kind."""
    out = [f"{len(found)} of {private} private or patched references are read by no check"]
    for reference in sorted(found, key=lambda r: (r.package, r.kind.value, r.target)):
        first = reference.sites[0] if reference.sites else None
        where = f"  ({first.path}:{first.line})" if first else ""
        anchor = f" {reference.anchor!r}" if reference.anchor is not None else ""
        out.append(f"  {reference.package} {reference.kind}: {reference.target}{anchor}{where}")
    return "\n".join(out) + "\n"


# -- stale downstream entries ------------------------------------------------------------


@dataclass(frozen=True)
class Staleness:
    """A downstream entry of a project: the upstream names the project's code still uses
    (``kept``), and where its text still mentions the others (``mentions``: source it
    generates, a string it looks for; extraction cannot see those as uses, so the entry
    is not called stale). Stale when neither."""

    patch: Fix
    kept: tuple[str, ...]
    mentions: tuple[str, ...] = ()  # "path:line" of the first few textual mentions

    @property
    def stale(self) -> bool:
        return bool(self.patch.upstream) and not self.kept and not self.mentions


def project_of(patch: Fix) -> str | None:
    """The project a downstream entry lives in: ``unsloth-zoo#549`` -> ``unsloth-zoo``."""
    if patch.reference is None:
        return None
    return normalise(patch.reference.split("#", 1)[0])


def normalise(name: str) -> str:
    """A project name as the package index compares them (``unsloth_zoo`` is ``unsloth-zoo``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def uses(references: Iterable[Reference], name: str) -> bool:
    """Whether a reference names ``name`` (``module:qualname``, or a module): the thing
    itself, something inside it, or the same qualname reached through another module of
    the package (a re-export: ``transformers.DynamicCache`` for
    ``transformers.cache_utils:DynamicCache``)."""
    module, _, qualname = name.partition(":")
    dotted = f"{module}.{qualname}" if qualname else module
    package = module.split(".", 1)[0]
    wanted = qualname.split(".") if qualname else []
    for reference in references:
        target = reference.target
        if target == dotted or target.startswith(f"{dotted}."):
            return True
        parts = target.split(".")
        if wanted and reference.package == package and _contains(parts[1:], wanted):
            return True
    return False


def _contains(parts: list[str], wanted: list[str]) -> bool:
    n = len(wanted)
    return any(parts[i : i + n] == wanted for i in range(len(parts) - n + 1))


def staleness(
    references: Sequence[Reference],
    patches: Iterable[Fix],
    project: str,
    *,
    texts: Mapping[str, str] | None = None,
) -> list[Staleness]:
    """Every downstream entry of ``project`` (by its ``reference``), with the upstream
    names the project still uses; ``texts`` (path -> the project's source) is searched for
    the names of an entry whose code uses none of them."""
    found = []
    for patch in patches:
        if project_of(patch) != normalise(project):
            continue
        kept = tuple(n for n in patch.upstream if uses(references, n))
        mentions = () if kept else _mentions(patch.upstream, texts or {})
        found.append(Staleness(patch, kept, mentions))
    return found


def _mentions(names: Iterable[str], texts: Mapping[str, str], limit: int = 3) -> tuple[str, ...]:
    words = {re.split(r"[.:]", name)[-1] for name in names}
    pattern = re.compile(r"\b(?:" + "|".join(map(re.escape, sorted(words))) + r")\b")
    found = []
    for path, text in sorted(texts.items()):
        for number, line in enumerate(text.splitlines(), 1):
            if pattern.search(line):
                found.append(f"{path}:{number}")
                if len(found) == limit:
                    return tuple(found)
    return tuple(found)


def render_staleness(found: Sequence[Staleness], project: str) -> str:
    """The stale entries, those only the project's text still mentions, then those that
    cannot be told."""
    stale = [item for item in found if item.stale]
    out = [
        f"{len(stale)} of {len(found)} downstream entries of {project} name upstream it no "
        f"longer uses"
    ]
    for item in stale:
        out.append(f"  stale: {item.patch.name!r} ({item.patch.reference})")
        out.extend(f"    no longer used: {name}" for name in item.patch.upstream)
    for item in found:
        if item.mentions and not item.kept:
            where = ", ".join(item.mentions)
            out.append(
                f"  used by no code, but mentioned at {where}: {item.patch.name!r} "
                f"(generated source or a string it looks for? check before removing)"
            )
        if not item.patch.upstream:
            out.append(f"  cannot tell: {item.patch.name!r} names no upstream (Fix.upstream)")
    return "\n".join(out) + "\n"


# -- reading the catalog's source ------------------------------------------------------------


def _package_of(module: ModuleType) -> str | None:
    """The package a catalog module checks (``pytestmark = pytest.mark.upstream(...)``)."""
    marks = getattr(module, "pytestmark", [])
    for mark in marks if isinstance(marks, list) else [marks]:
        if getattr(mark, "name", None) == "upstream" and mark.args:
            return str(mark.args[0])
    return None


def _spec(obj: Any) -> CheckSpec | None:
    for mark in getattr(obj, "pytestmark", []):
        if mark.name == "canary_check" and mark.args and isinstance(mark.args[0], CheckSpec):
            return mark.args[0]
    return None


def _reads(
    test: str, package: str, spec: CheckSpec | None, texts: set[str], values: set[str]
) -> CheckReads:
    assert spec is not None  # every check of a table is declared at import
    literals = texts | values
    names = {part for text in literals for part in _IDENTIFIER.findall(text)}
    return CheckReads(test, package, spec.reads, frozenset(names), frozenset(literals))


def _strings(values: Iterable[Any]) -> Iterable[str]:
    for value in values:
        if isinstance(value, str):
            yield value
        elif isinstance(value, (tuple, list, set, frozenset)):
            yield from _strings(value)


class _ModuleSource:
    """A catalog module's syntax tree: its functions, string constants and helpers."""

    def __init__(self, path: Path) -> None:
        tree = ast.parse(path.read_text("utf-8"), filename=str(path))
        self.functions = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
        self.constants: dict[str, set[str]] = {}
        for node in tree.body:
            if isinstance(node, ast.Assign):
                strings = _literals(node.value)
                for target in node.targets:
                    if isinstance(target, ast.Name) and strings:
                        self.constants[target.id] = strings

    def names_in(self, function: str, seen: set[str] | None = None) -> set[str]:
        """The string literals ``function`` holds or reaches: its own, the constants it
        names, and those of the module's functions it calls (helpers, transitively)."""
        seen = seen if seen is not None else set()
        node = self.functions.get(function)
        if node is None or function in seen:
            return set()
        seen.add(function)
        found = set().union(*(_literals(statement) for statement in _code(node)))
        for name in {n.id for n in ast.walk(node) if isinstance(n, ast.Name)}:
            found |= self.constants.get(name, set())
            found |= self.names_in(name, seen)
        return found


def _code(function: ast.FunctionDef) -> list[ast.stmt]:
    """The function's statements without its docstring: what a check says it expects is
    not what it looks up."""
    body = function.body
    first = body[0] if body else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
        return body[1:]
    return body


def _literals(node: ast.AST) -> set[str]:
    return {
        n.value for n in ast.walk(node) if isinstance(n, ast.Constant) and isinstance(n.value, str)
    }


# -- the two listings, as ``python -m canary surface`` prints them ------------------------


def uncovered_report(
    references: Sequence[Reference],
    *,
    defined_at: Callable[[Reference], str | None] | None = None,
) -> str:
    """``surface --uncovered``: the target's private or patched references that no check
    of canary's catalog reads."""
    reads = catalog_reads(shipped_catalog())
    found = uncovered(references, reads, defined_at=defined_at)
    return render_uncovered(found, private=sum(1 for r in references if r.private))


def stale_report(
    references: Sequence[Reference], project: str, texts: Mapping[str, str] | None = None
) -> str:
    """``surface --stale``: the downstream entries of ``project`` it no longer needs
    (``texts``: the project's files, path -> text, to tell a name it only mentions)."""
    found = staleness(references, DOWNSTREAM_PATCHES, project, texts=texts)
    return render_staleness(found, project)
