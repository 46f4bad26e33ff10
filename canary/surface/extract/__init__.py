"""A project's dependency surface, read from its source with stdlib ``ast`` (nothing of it is
imported): every upstream import, attribute chain, patch target, ``getsource`` target and
source anchor, each with every site that uses it.

What is followed, and where it stops:

- **Bindings.** ``import``/``from ... import`` anywhere (functions included),
  ``importlib.import_module("...")``/``__import__("...")`` with a literal, ``x = <upstream
  chain>`` aliases, ``getattr(x, "name")``, and the project's own modules: a name a project
  module binds to upstream (``from ._utils import *``, ``from .llama import Trainer``) is
  upstream wherever it is imported. A name bound to upstream in two branches (a ``try``
  body and its ``except ImportError``, both sides of an ``if``) is used through both
  (:class:`~canary.surface.extract.scopes.Alternative`). A name nothing binds, in a module
  with exactly one ``from <upstream> import *``, comes from that module (two such imports:
  unknown, skipped).
- **Attribute chains** are reported whole (``transformers.models.llama.modeling_llama.
  nn.LayerNorm``): where a chain leaves the package (``nn`` is torch's) is only known from
  the upstream tree, so resolution cuts it there and says so. A chain stops at a call, a
  subscript, and at the attributes Python itself gives every object (``__name__``,
  ``__dict__``, ``__wrapped__``, ...), and a list/dict/logger method called on a value named
  like one (``MAPPING.append``, ``logger.addFilter``): those say nothing about upstream. A
  bare imported name is its import; only chains that go further are attribute references.
- **Patches**: assignment to an upstream chain (``x.y.forward = ...``, also ``+=``),
  ``setattr(x, "name", ...)`` with a literal name (and the calls that add an enum member so,
  :data:`~canary.surface.extract.scopes.BINDERS`), and item assignment into an upstream
  mapping (the reference is the mapping).
- **Sources and anchors**: ``inspect.getsource(<upstream object>)`` is a SOURCE reference;
  the text is followed through assignments, ``textwrap.dedent`` (anchors then match the
  dedented text), ``.replace``/``.strip`` and ``re.sub`` results, project helpers that return
  a source or transform one (summarised once; a helper named ``*dedent*``/``*detab*`` counts
  as dedenting), ``x or ""``, and every anchor applied to it becomes an ANCHOR reference on
  the function or class it came from: ``.replace``/``.find``/``.index``/``.count``/
  ``.split``/``.partition``, ``in``/``not in``, ``re.sub``/``search``/``match``/``findall``/
  ``finditer``/``split`` and compiled patterns (their flags folded into the pattern as
  inline flags). The anchor text is followed through module constants (this module's or a
  project module's), dict/list literals and subscripts of them, loops and comprehensions
  over lists or dicts of ``(old, new)`` pairs, concatenation, and f-strings: fully literal
  ones whole, others as their literal fragments, each of which must be there. Text the
  project inserted itself (the new side of an earlier ``.replace``), or an anchor spanning
  it (it matches only the rewritten text), is not an anchor.
- **Across functions**: a project function called with a source text, or with an upstream
  object, is walked as called (literal arguments too): the anchors it applies to the text,
  and the sources it reads and patches it makes through the object (``patch_function(cls,
  "forward", f)`` doing ``setattr(cls, name, f)``), are references at its own lines.
  ``getsource(eval(<literal>))`` reads the object the literal names. Functions registered in
  a run-time registry get their source from a ``source_registries`` declaration in
  ``[tool.canary.surface]``, narrowed by the tests on the method-name parameter.
- **Not anchors** (skipped and counted in :class:`Survey`, never guessed): ``x in source``
  in the test of an ``if`` that returns (x is what the patch would add: without it the patch
  goes on), ``x not in source`` in the test of an ``if`` that patches (absent x is when the
  patch applies: :mod:`canary.surface.anchortests`), text naming the project's own markers
  (``_unsloth_*``), an anchor on a registered source where no test selected the method,
  ``getsource(eval(...))`` of a string not known statically.
- **Anchor tests** (:mod:`canary.surface.anchortests`): spellings the project tries in turn
  are each other's ``alternatives`` on their sites; an anchor whose presence is tested, and
  the code that runs only where such a test found it, is guarded.
- **Guarded** sites: inside ``try`` with a handler or ``with suppress(...)``, under a test
  :mod:`canary.surface.guards` recognises, or in a ``hasattr`` / three-argument ``getattr``
  itself. ``if TYPE_CHECKING:`` blocks never run and are skipped.
- **Where a site is reached**: the upstream imports its function made before it
  (``Site.after``: where one fails, it is not reached), and the conditions of the
  project's imports of its module (:mod:`canary.surface.importers`).
- **The project's own attributes** on upstream objects are not dependencies, set or read: a
  private attribute whose name carries the project's name (``_unsloth_patched``, from its
  top-level packages; public names are left alone, upstream has ``use_liger_kernel``) or
  matches ``own_attributes``; a literal marker on something the project replaced
  (``X.forward = mine; X.forward._fast = True``); one that keeps upstream's original beside
  it (``X._orig_forward = X.forward``), or the original's source text, to read back when
  it patches again (``X._orig_src = inspect.getsource(X.forward)``); and one it sets only
  where a test said it is not there (``if hasattr(X, "_orig"): return`` before it, or a
  backfill under ``if not hasattr(...)``). Reads prove nothing either way: patching a name
  and then calling it is the normal case, and ``f = getattr(peft, "get_peft_model", None)``
  before replacing it is a dependency. An attribute only ever assigned is a patch: replacing
  a name upstream no longer uses silently does nothing, which is what the surface exists to
  catch; one upstream never had is missing on every release, and ``own_attributes`` names
  it.

Which files are read: each file that names an upstream package (or calls ``getsource``),
then each file that imports a project module and names something project modules bind to
upstream; other project modules are parsed only when one of those needs their bindings,
constants or helpers. A file that does not parse is an error naming it (a
:class:`~canary.errors.ParseError`): leave such files out with ``exclude`` in
``[tool.canary.surface]``.

The package, in the order data flows: :mod:`.syntax`, :mod:`.scopes` (bindings and scopes)
and :mod:`.uses` (a use, and uses merged into references) know nothing of the walk;
:mod:`.project` is the project index, which walks a file through the walker it is handed;
the walker is :mod:`.walker` extending :mod:`.anchoring`, :mod:`.conditions`, :mod:`.values`
and :mod:`.state` (where the walk stands, each change of it scoped to a ``with`` block).
"""

from __future__ import annotations

import multiprocessing as mp
import os
import threading
from collections import Counter
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from canary.gcpause import no_collections
from canary.surface import callers, importers
from canary.surface.config import SourceRegistry
from canary.surface.extract.installed import installed_modules
from canary.surface.extract.project import Project
from canary.surface.extract.uncalled import mark_uncalled
from canary.surface.extract.uses import (
    Use,
    backfilled,
    is_own,
    merge,
    named_for_models,
    own_targets,
)
from canary.surface.extract.walker import Walker
from canary.surface.model import Reference

__all__ = ["Survey", "extract", "survey"]


@dataclass(frozen=True)
class Survey:
    """What extraction found, and what it saw but could not follow (reason -> sites): an
    anchor with no certain target is left out, never guessed (a wrong target is a false
    alarm)."""

    references: tuple[Reference, ...]
    skipped: Mapping[str, int]


def extract(
    root: Path,
    files: Iterable[str],
    *,
    upstream: Collection[str],
    own_attributes: Collection[str] = (),
    registries: Collection[SourceRegistry] = (),
    version_parsers: Collection[str] = (),
) -> tuple[Reference, ...]:
    """The references of the project at ``root`` (``files`` relative, "/"-separated) to the
    packages whose import names are ``upstream``, one per key with every site, sorted.
    ``own_attributes``: fnmatch patterns of attribute names the project puts on upstream
    objects itself (beyond those carrying its name); ``registries``: the project's source
    registries; ``version_parsers``: dotted names of callables that order release versions
    as packaging's ``Version`` does (all three from ``[tool.canary.surface]``)."""
    return survey(
        root,
        files,
        upstream=upstream,
        own_attributes=own_attributes,
        registries=registries,
        version_parsers=version_parsers,
    ).references


@no_collections()  # the collector's passes over a large module's trees made it superlinear
def survey(
    root: Path,
    files: Iterable[str],
    *,
    upstream: Collection[str],
    own_attributes: Collection[str] = (),
    registries: Collection[SourceRegistry] = (),
    version_parsers: Collection[str] = (),
    workers: int | None = None,
) -> Survey:
    """:func:`extract`, with what could not be followed. ``workers``: processes to walk a
    large project's files in (default: one per CPU; 1: this process only)."""
    project = Project(
        root, tuple(files), frozenset(upstream), frozenset(version_parsers), walker=Walker
    )
    paths = list(project.paths_to_walk())
    walked = _walk_all(project, paths, os.cpu_count() if workers is None else workers)
    uses, skipped = walked.uses, walked.skipped
    for registry in registries:
        uses.extend(project.registered_anchors(registry))
    uses.extend(project.drain_applied())
    skipped |= project.skipped
    uses = mark_uncalled(uses, project.files, project.text, project.in_prose)
    uses, loads = callers.carry(
        uses, walked.loads, walked.mentions, project.module_of, project.text, prose=project.in_prose
    )
    uses = importers.reach(
        uses,
        loads,
        project.module_of,
        project.source,
        strings=walked.strings,
        walked=paths,
    )
    installed = installed_modules(project.files, project.text, project.is_upstream)
    uses = [_installed_over(use, installed) for use in uses]
    uses = named_for_models(uses, project.imported_eagerly)
    own = own_targets(uses, project.own_tokens, tuple(own_attributes))
    # a presence test of a name the project puts back where it is absent still decides where
    # the code another test gates runs: resolved, where another site's conditions name it
    asked = {t for use in uses for t in (*use.requires, *use.lacks) if t != use.target}
    tested = backfilled(uses, own) & asked
    references = merge(
        use for use in uses if not is_own(use, own) or (use.presence and use.target in tested)
    )
    counts = Counter(why for why, _, _ in skipped)
    return Survey(references, dict(sorted(counts.items())))


def _installed_over(use: Use, installed: Mapping[str, str]) -> Use:
    """``use`` undecided where its target lies in a module the project puts its own module
    under (``sys.modules[name] = m``): which of the two it reads there is not known."""
    if use.undecided:
        return use
    for name, where in installed.items():
        if use.target == name or use.target.startswith(f"{name}."):
            why = f"{name} may be the project's own module, put under that name at {where}"
            return replace(use, undecided=why)
    return use


# Fewer files than this are walked in this process: forking costs more than they do.
_PARALLEL_FROM = 16


_FORKED: Project | None = None  # the project a forked worker walks (inherited, warm)


@dataclass
class _Walked:
    """What walking files found: uses, skips, and the places that import the project's
    modules and name its functions."""

    uses: list[Use] = field(default_factory=list)
    skipped: set[tuple[str, str, int]] = field(default_factory=set)
    loads: list[importers.Load] = field(default_factory=list)
    mentions: list[callers.Mention] = field(default_factory=list)
    strings: set[str] = field(default_factory=set)

    def add(self, other: _Walked) -> None:
        self.strings |= other.strings
        self.uses.extend(other.uses)
        self.skipped |= other.skipped
        self.loads.extend(other.loads)
        self.mentions.extend(other.mentions)


def _walk_all(project: Project, paths: list[str], workers: int) -> _Walked:
    """Walk ``paths``: in this process, or, for a large project where ``fork`` exists, in
    ``workers`` forked processes that inherit the project's bindings already read (parsing
    is most of the time, and files are independent given those)."""
    global _FORKED  # noqa: PLW0603 - handed to forked workers, which inherit it
    forkable = "fork" in mp.get_all_start_methods() and _single_threaded()
    if workers <= 1 or len(paths) < _PARALLEL_FROM or not forkable:
        results = [_walk_file(project, path) for path in paths]
    else:
        _FORKED = project
        try:
            with mp.get_context("fork").Pool(workers) as pool:
                results = pool.map(_walk_forked, paths, chunksize=4)
        finally:
            _FORKED = None
    walked = _Walked()
    for result in results:
        walked.add(result)
    return walked


def _single_threaded() -> bool:
    """Whether this process has one thread: a fork copies the locks other threads hold, held
    for good in the child (3.12+ warns), so with threads the walk stays in this process."""
    try:
        return len(os.listdir("/proc/self/task")) == 1  # every thread, C libraries' too
    except OSError:
        return threading.active_count() == 1


def _walk_forked(path: str) -> _Walked:
    assert _FORKED is not None
    return _walk_file(_FORKED, path)


def _walk_file(project: Project, path: str) -> _Walked:
    """One file's uses (with those of the helpers it hands a source to), skips, its imports
    of project modules and the places it names the project's functions."""
    walker = Walker(project, path, emit=True)
    walker.walk_module()
    skipped, project.skipped = project.skipped, set()
    return _Walked(
        [*walker.uses, *project.drain_applied()],
        skipped,
        walker.loads,
        walker.mentions,
        walker.strings,
    )
