"""The cases of a run: their trees read through the cache, and the snapshots checks see.

Data flows one way: a :class:`Case` names a package at a version and where it comes
from; a :class:`Tree` reads its files through the cache (fetching misses from a
source); the :class:`Workspace` schedules the cases' loading (a prefetch pool, a case
whose fetch failed fails fast), has their files indexed by the
:class:`~canary.indexstore.IndexStore` and hands a check a :class:`Snapshot` holding just
the modules it declared.
Checks never fetch or parse: everything a check sees was loaded before it ran, so a
fetch or parse problem is a setup error of that case, never a pass or a drift.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field

from packaging.version import Version

from canary import codeindex, versions
from canary.cache import Cache, FileKey, content_digest
from canary.errors import CacheDamaged, Drift, InfrastructureError, OfflineMiss, Subject
from canary.indexstore import IndexStore, ParseJob
from canary.inheriting import InheritingModule
from canary.sources import Source
from canary.sources.version import declared_version, version_files
from canary.symbols import PackageTree

MAIN = "main"
_CASES_WORTH_PROCESSES = 8


@dataclass(frozen=True)
class Case:
    """One package at one version, from one kind of source: one column of the matrix."""

    package: str
    label: str  # "5.5.4", "main", or a local tree's version
    source: str  # "index", "github" or "local"

    @property
    def id(self) -> str:
        """The test id: ``transformers_5_5_4``, ``transformers_main``."""
        return f"{self.package}_{self.label.replace('.', '_')}"

    @property
    def mutable(self) -> bool:
        """Whether this tree can change under the same name (a branch, not a release)."""
        return self.label == MAIN

    @functools.cached_property
    def known_version(self) -> Version | None:
        """The version, where the label is one; ``main`` or a commit is only known after
        reading its tree. Parsed once: a full run asks tens of thousands of times."""
        return versions.parse(self.label)

    @property
    def commit(self) -> str | None:
        """The commit the label names (a replayed run of main), else None."""
        return self.label if versions.is_commit(self.label) else None

    def __str__(self) -> str:
        return f"{self.package} {self.label}"


@dataclass(frozen=True)
class FetchPolicy:
    offline: bool = False
    refresh: bool = False  # refetch mutable refs now
    ttl: float = 6 * 3600.0  # seconds a mutable ref's file stays fresh
    # Each file a case loads also gets a cache entry of its own (the static tier reads
    # them back every run). False: a release its source keeps whole on disk (a kept
    # wheel) is read there, no entry written, for a reader that remembers what it derives.
    keep_files: bool = True


@dataclass
class Stats:
    """What a run cost; read by the terminal summary and the benchmark."""

    files_from_cache: int = 0
    files_fetched: int = 0
    bytes_downloaded: int = 0
    modules_parsed: int = 0
    modules_from_cache: int = 0
    fetch_seconds: float = 0.0
    parse_seconds: float = 0.0
    outcomes_remembered: int = 0  # checks answered from an earlier run (canary.plugin.memo)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, **amounts: float) -> None:
        with self._lock:
            for name, amount in amounts.items():
                setattr(self, name, getattr(self, name) + amount)

    def as_dict(self) -> dict[str, float]:
        """The counters, for a process that reports to another (an xdist worker)."""
        return {name: getattr(self, name) for name in self.__dataclass_fields__ if name[0] != "_"}


PINS = "pins"  # cache blobs: the commit a branch was resolved to (per run, and the last)


class Tree:
    """The files of one case, read through the cache.

    A branch (``main``) is pinned to one commit before its first file is read, where the
    source can pin (GitHub): from then on its files are keyed by that commit, immutable
    like a release's. ``run_id`` names the run, so every process of it (xdist workers)
    reads the same commit; offline, the last commit resolved online is read.
    """

    def __init__(
        self,
        case: Case,
        source: Source,
        cache: Cache | None,
        policy: FetchPolicy,
        stats: Stats,
        *,
        run_id: str | None = None,
    ) -> None:
        self.case = case
        self.source = source
        self.cache = cache
        self.policy = policy
        self.stats = stats
        self.run_id = run_id
        self.commit = case.commit  # a branch gets its commit when pinned
        self._pin_lock = threading.Lock()

    @property
    def mutable(self) -> bool:
        return self.case.mutable and self.commit is None

    def read(self, paths: Iterable[str], *, keep: bool = True) -> dict[str, bytes | None]:
        """Each path's bytes (None where absent upstream); misses are fetched once.

        ``keep=False``: where the source holds the whole release on disk already (a kept
        wheel), read it there, neither reading nor writing the cache's entry per file: for
        a reader that remembers what it derives from thousands of files itself."""
        paths = sorted(set(paths))
        self._pin()
        if self.cache is None:  # local trees are read in place
            return self._fetch(paths)
        whole = not keep and self._kept_whole()
        if whole and getattr(self.source, "available_offline", False):
            return self._fetch(paths)
        found = {} if whole else self._from_cache(paths)
        missing = [p for p in paths if p not in found]
        if not missing:
            return found
        # Another worker may be fetching the same tree: wait for it, then look again.
        with self.cache.lock(f"{self.case.source}-{self.case.package}-{self._ref}"):
            if not whole:
                found.update(self._from_cache(missing))
                missing = [p for p in paths if p not in found]
            if missing:
                fetched = self._fetch(missing)
                if not whole:
                    for path, content in fetched.items():
                        self.cache.write_file(self._key(path), content)
                found.update(fetched)
        return found

    def digests(self, paths: Iterable[str]) -> dict[str, str]:
        """Each path's :func:`~canary.cache.content_digest`: read off the cache entries'
        headers where the tree cannot change under its ref (a release, a pinned commit),
        else (a local tree, a branch not pinned, a file never read) by reading the file."""
        paths = sorted(set(paths))
        self._pin()
        found: dict[str, str] = {}
        if self.cache is not None and not self.mutable:
            for path in paths:
                if (digest := self.cache.file_digest(self._key(path))) is not None:
                    found[path] = digest
        if rest := [p for p in paths if p not in found]:
            found.update((p, content_digest(c)) for p, c in self.read(rest).items())
        return found

    def _kept_whole(self) -> bool:
        """Whether the source holds this release whole on disk, or will once it is
        fetched (a kept wheel): its files need no cache entry each. Offline, only a
        release already kept: otherwise the entries are all there is."""
        if self.mutable:
            return False
        if getattr(self.source, "available_offline", False):
            return True
        return not self.policy.offline and getattr(self.source, "keeps_release", False)

    def _pin(self) -> None:
        # Only a source that can name a commit pins (GitHub); a branch read from anything
        # else keeps the TTL and --canary-refresh.
        pin = getattr(self.source, "pin", None)
        if not self.case.mutable or self.commit is not None or pin is None:
            return
        with self._pin_lock:
            if self.commit is None:
                self.commit = self._resolve(pin)

    def _resolve(self, pin: Callable[[str | None], str]) -> str:
        if self.cache is None:
            return pin(None)
        last = f"{self.case.source}-{self.case.package}-{self.case.label}"
        if self.policy.offline:
            if not (known := self.cache.read_blob(PINS, last)):
                raise OfflineMiss(
                    f"--canary-offline: {self.case} was never resolved to a commit with "
                    f"{self.cache.root}; run once without --canary-offline, or replay a "
                    f"commit: --canary-tags {self.case.package}=<40-hex commit>"
                )
            return pin(known.decode("ascii"))
        this_run = f"{self.run_id}-{last}" if self.run_id else None
        with self.cache.lock(f"pin-{last}"):
            if this_run and (known := self.cache.read_blob(PINS, this_run)):
                return pin(known.decode("ascii"))
            commit = pin(None)
            if this_run:
                self.cache.write_blob(PINS, this_run, commit.encode())
            self.cache.write_blob(PINS, last, commit.encode())
            return commit

    @property
    def _ref(self) -> str:
        return self.commit or self.case.label

    def _from_cache(self, paths: Sequence[str]) -> dict[str, bytes | None]:
        assert self.cache is not None
        if self.mutable and self.policy.refresh and not self.policy.offline:
            return {}
        max_age = self.policy.ttl if self.mutable and not self.policy.offline else None
        found: dict[str, bytes | None] = {}
        for path in paths:
            try:
                entry = self.cache.read_file(self._key(path), max_age=max_age)
            except CacheDamaged as exc:
                self._check_damaged_refetchable(exc)
                continue  # a miss now: refetched below
            if entry is not None:
                found[path] = entry.content
        self.stats.add(files_from_cache=len(found))
        return found

    def _check_damaged_refetchable(self, damaged: CacheDamaged) -> None:
        """Offline, a damaged entry is refetched only from what the cache still holds (the
        kept wheel); otherwise it is this case's error, naming the file."""
        if self.policy.offline and not getattr(self.source, "available_offline", False):
            raise CacheDamaged(
                f"--canary-offline: {damaged}; run the same command without "
                f"--canary-offline to fetch {self.case} again",
                path=damaged.path,
                cause="damaged cache entries (offline: not refetched)",
            ) from None

    def _fetch(self, paths: Sequence[str]) -> dict[str, bytes | None]:
        offline_capable = getattr(self.source, "available_offline", False)
        if self.policy.offline and self.cache is not None and not offline_capable:
            raise OfflineMiss(
                f"--canary-offline: {self.source.description} is not in the cache "
                f"({len(paths)} file(s), e.g. {paths[0]}); run the same command without "
                f"--canary-offline to fill {self.cache.root}",
                cause="not in the cache (offline)",
            )
        started = time.perf_counter()
        before = getattr(self.source, "bytes_downloaded", None)
        fetched = self.source.fetch(paths)
        missing = set(paths) - set(fetched)
        if missing:
            raise InfrastructureError(
                f"{self.source.description}: the source gave no answer for {sorted(missing)}"
            )
        if before is not None:  # the index source counts whole wheels
            downloaded = self.source.bytes_downloaded - before
        else:
            downloaded = sum(len(content) for content in fetched.values() if content)
        self.stats.add(
            files_fetched=len(paths),
            fetch_seconds=time.perf_counter() - started,
            bytes_downloaded=downloaded,
        )
        return fetched

    def _key(self, path: str) -> FileKey:
        return FileKey(self.case.source, self.case.package, self._ref, path)


@dataclass(frozen=True)
class Snapshot:
    """What one check sees of one case: the modules it declared, already parsed."""

    case: Case
    version: Version | None
    modules: Mapping[str, codeindex.Module | None]
    # What a check that passed has to say (the side of a split a pre-release matched).
    notes: list[str] = field(default_factory=list, compare=False)
    # Reads a file of the package beyond ``modules`` (where a base class lives), for the
    # static MRO of a class the check looks into; None: only ``modules`` can be read.
    load: Callable[[str], codeindex.Module | None] | None = field(
        default=None, repr=False, compare=False
    )
    # The files ``load`` read while the check ran: what it was decided from, beside ``modules``.
    loaded: set[str] = field(default_factory=set, repr=False, compare=False)

    @property
    def package(self) -> str:
        return self.case.package

    def module(self, path: str) -> InheritingModule:
        """The parsed module at ``path``; drift when upstream no longer has that file. Its
        classes' ``method(name)`` follows the static MRO (:mod:`canary.inheriting`)."""
        self._declared(path)
        found = self.modules[path]
        if found is None:
            raise Drift(
                f"{path} does not exist in {self.case}", subject=Subject(path), kind=Drift.MISSING
            )
        return InheritingModule.of(found, lambda cls, name: self.method(path, cls, name))

    def has_file(self, path: str) -> bool:
        self._declared(path)
        return self.modules[path] is not None

    def method(self, path: str, cls: str, name: str) -> codeindex.Function:
        """The method ``name`` that class ``cls`` of ``path`` resolves to through its static
        MRO, as Python would find it: its own, or one it inherits from a base or mixin
        anywhere in the package (the check declares ``inherits=`` for ``cls``, so those files
        are read). Drift when no class of the package binds it, or binds it as no method."""
        self._declared(path)
        found = self._tree.member(path, cls, name)
        if found.found and found.function is not None:
            return found.function
        where = f"{found.qualname} in {found.path}" if found.found else found.why
        if found.found:
            why = f"{cls}.{name} resolves to a {found.kind.replace('_', ' ')}, {where}"
        elif found.unknown:
            why = f"{cls}.{name} is not bound by any class of {self.package}: {where}"
        else:
            why = f"{cls} has no method {name!r}: {where}"
        raise Drift(
            f"{why} ({self.case})",
            subject=Subject(path, f"{cls}.{name}"),
            kind=Drift.CHANGED if found.found else Drift.MISSING,
        )

    def mro(self, path: str, cls: str) -> tuple[codeindex.Class | str, ...]:
        """Class ``cls`` of ``path`` and its bases in method resolution order: a
        :class:`~canary.codeindex.Class` for each class of the package (wherever it lives;
        the check declares ``inherits=`` for ``cls``), the dotted name for each base outside
        it ("transformers.trainer.Trainer"). Drift when the order cannot be worked out."""
        self._declared(path)
        order = self._tree.mro(path, cls)
        if not order:
            raise Drift(
                f"the bases of {cls} in {path} cannot be followed in {self.case}",
                subject=Subject(path, cls),
                kind=Drift.MISSING,
            )
        return tuple(entry if isinstance(entry, str) else entry[1] for entry in order)

    @functools.cached_property
    def _tree(self) -> PackageTree:
        # One tree per snapshot: what one lookup learns of the package (the modules it
        # resolved, the MROs it linearised) serves the check's next lookup.
        return PackageTree(self.package, self._inherited)

    def _inherited(self, path: str) -> codeindex.Module | None:
        if path not in self.modules and self.load is not None:
            self.loaded.add(path)
            return self.load(path)
        if path not in self.modules:
            raise KeyError(
                f"{path!r} was not read for this check: the class whose MRO reaches it "
                f"must be named in the check's inherits="
            )
        return self.modules[path]

    def first_existing(self, *paths: str) -> codeindex.Module:
        """The first of ``paths`` that exists (for code that moved between folders)."""
        for path in paths:
            if self.has_file(path):
                return self.module(path)
        raise Drift(f"none of {', '.join(paths)} exists in {self.case}", kind=Drift.MISSING)

    def _declared(self, path: str) -> None:
        if path not in self.modules:
            raise KeyError(
                f"{path!r} was not declared by this check: add it to reads= so it is fetched "
                f"before the check runs (declared: {', '.join(sorted(self.modules)) or 'none'})"
            )


@dataclass
class _CaseState:
    """What the workspace knows of one case; ``lock`` guards the rest."""

    tree: Tree
    lock: threading.Lock = field(default_factory=threading.Lock)
    modules: dict[str, codeindex.Module | None] = field(default_factory=dict)
    digests: dict[str, str] = field(default_factory=dict)  # of the bytes each module came from
    parsing: dict[str, ParseJob] = field(default_factory=dict)  # handed to a parse process
    version_read: bool = False
    version: Version | None = None  # what the tree declares, once read (main)
    failure: InfrastructureError | None = None  # a failed read: fails fast from then on
    pending: Future[None] | None = None  # the prefetch loading its files


class Workspace:
    """Every case of a run: its tree, its version, its modules; one prefetch pool."""

    def __init__(
        self,
        make_source: Callable[[Case], Source],
        cache: Cache | None,
        policy: FetchPolicy,
        *,
        workers: int = 4,
        parse_processes: int | None = None,
        run_id: str | None = None,
    ) -> None:
        self.make_source = make_source
        self.run_id = run_id
        self.cache = cache
        self.policy = policy
        self.stats = Stats()
        self.workers = workers
        # Parsing is CPU-bound and holds the GIL, so a prefetch hands cache misses to
        # parse processes: they parse on other cores while the fetch threads download.
        self.indexes = IndexStore(cache, self.stats.add, processes=parse_processes)
        self._cases: dict[Case, _CaseState] = {}
        self._lock = threading.Lock()
        self._pool: ThreadPoolExecutor | None = None

    def commit(self, case: Case) -> str | None:
        """The commit the case's tree is read at (a branch once pinned, or a commit case);
        None for a release, a local tree, or a branch whose pinning failed."""
        with self._lock:
            state = self._cases.get(case)
        return case.commit if state is None else state.tree.commit

    def version(self, case: Case) -> Version | None:
        """The case's version: its label, or what the tree itself declares (``main``)."""
        if (known := case.known_version) is not None:
            return known
        state = self._state(case)
        if state.pending is not None:
            _wait(state.pending)  # the prefetch reads the version too; its failure is ours
        with state.lock:
            if not state.version_read:
                state.version = self._declared_version(state, {})
                state.version_read = True
            return state.version

    def prefetch(self, plan: Mapping[Case, set[str]]) -> None:
        """Start loading every case's files in the background, a few cases at a time. For
        a case already being loaded, ``paths`` are loaded once that is done (what it has
        loaded is not read again): a caller can start every download at once and name
        more files of a case later."""
        if not plan:
            return
        fresh = sum(self._state(case).pending is None for case in plan)
        with self._lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="canary-fetch")
            pool = self._pool
            if fresh:  # more files of cases under way: they keep how they are parsed
                # Starting processes costs more than parsing a handful of files in place.
                self.indexes.in_processes = fresh >= _CASES_WORTH_PROCESSES
        for case, paths in plan.items():
            state = self._state(case)
            wanted = sorted(paths)
            # Not state.lock: a load holds it for its whole download. Those dicts only
            # grow, so a path seen in them is loaded; one not seen yet costs a load that
            # finds it there.
            with self._lock:
                if state.pending is None:
                    state.pending = pool.submit(self._load, state, wanted)
                elif any(p not in state.modules and p not in state.parsing for p in wanted):
                    load = functools.partial(pool.submit, self._load, state, wanted)
                    state.pending = _then(state.pending, load)

    def snapshot(
        self, case: Case, paths: Sequence[str], *, inherits: Sequence[str] = ()
    ) -> Snapshot:
        """What a check sees: the modules at ``paths`` and, for each class named in
        ``inherits`` (defined in one of them), the files of the package its bases live in."""
        state = self._state(case)
        if state.pending is not None:
            _wait(state.pending)  # a failed prefetch is this case's setup error
        self._load(state, paths)
        version = self.version(case)
        modules = {p: self._module(state, p) for p in paths}
        if inherits:
            modules.update(self._bases(state, modules, inherits))

        def load(path: str) -> codeindex.Module | None:
            self._load(state, [path])
            return self._module(state, path)

        return Snapshot(case, version, modules, load=load)

    def _bases(
        self,
        state: _CaseState,
        declared: Mapping[str, codeindex.Module | None],
        classes: Sequence[str],
    ) -> dict[str, codeindex.Module | None]:
        """Every file the static MRO of ``classes`` reads, beyond ``declared``: read here,
        before the check runs, so a fetch or parse failure is the case's setup error."""

        def load(path: str) -> codeindex.Module | None:
            if path in declared:
                return declared[path]
            self._load(state, [path])
            return self._module(state, path)

        tree = PackageTree(state.tree.case.package, load)
        for qualname in classes:
            head = qualname.split(".")[0]
            for path, module in declared.items():
                if module is not None and head in module.classes:
                    for entry in tree.mro(path, qualname):
                        # A method bound by an import in a class body lives in that file.
                        if not isinstance(entry, str):
                            for name in entry[1].imports:
                                tree.member(entry[0], entry[1].qualname, name)
                    break
        return {path: load(path) for path in sorted(tree.paths_read) if path not in declared}

    def read(
        self, case: Case, paths: Sequence[str], *, keep: bool = True
    ) -> dict[str, bytes | None]:
        """The files' bytes as the case's tree has them (None where absent), unparsed: for
        a reader that needs the text or its digest, not the code index. ``keep``: as
        :meth:`Tree.read`."""
        state = self._state(case)
        if state.pending is not None:
            _wait(state.pending)  # a failed prefetch is this case's failure here too
        return self._read(state, paths, keep=keep)

    def digests(self, case: Case, paths: Iterable[str]) -> dict[str, str]:
        """Each path's :func:`~canary.cache.content_digest` in the case's tree, no code
        index read: for a module a snapshot holds, the bytes it was made from."""
        state = self._state(case)
        # Not state.lock (a load holds it for its whole download): the dict only grows.
        found = {p: state.digests[p] for p in paths if p in state.digests}
        if rest := [p for p in paths if p not in found]:
            if (failure := state.failure) is not None:
                raise failure.again() from failure
            read = state.tree.digests(rest)
            found.update(read)
            if not state.tree.mutable and state.tree.cache is not None:
                # A release's (or a pinned commit's) files never change: ask once a run.
                # A local tree's may, so each question reads it again.
                for path, digest in read.items():
                    state.digests.setdefault(path, digest)
        return found

    def indexed(self, case: Case, path: str) -> bool:
        """Whether ``path``'s code index is at hand or being made (a load named it)."""
        state = self._state(case)
        return path in state.modules or path in state.parsing

    def fingerprints(self, case: Case, paths: Sequence[str]) -> dict[str, str]:
        """A fingerprint of each file its source records without reading it (a kept
        wheel's CRC-32 and size): the same fingerprint at the same path in another case is
        the same file. {} where the source records none; a path left out is read as usual."""
        state = self._state(case)
        if state.pending is not None:
            _wait(state.pending)
        fingerprints = getattr(state.tree.source, "fingerprints", None)
        return fingerprints(paths) if fingerprints is not None else {}

    def listdir(self, case: Case, folder: str) -> list[str] | None:
        """The entries of ``folder`` in the case's tree, where its source can list it (a
        kept wheel, a local tree); None otherwise. Read after the case's files: a wheel is
        kept once a first file of it was read."""
        listdir = getattr(self._state(case).tree.source, "listdir", None)
        return listdir(folder) if listdir is not None else None

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
        self.indexes.close()

    def _state(self, case: Case) -> _CaseState:
        with self._lock:
            if (state := self._cases.get(case)) is None:
                cache = None if case.source == "local" else self.cache
                tree = Tree(
                    case, self.make_source(case), cache, self.policy, self.stats, run_id=self.run_id
                )
                state = self._cases[case] = _CaseState(tree)
            return state

    def _load(self, state: _CaseState, paths: Sequence[str]) -> None:
        case = state.tree.case
        with state.lock:
            wanted = [p for p in paths if p not in state.modules and p not in state.parsing]
            if not wanted:
                return
            # A tree that declares its own version (main) reads it in the same fetch, so
            # one failure decides every check of the case alike, whatever runs first.
            reads_version = case.known_version is None and not state.version_read
            extra = version_files(case.package) if reads_version else []
            contents = self._read(state, [*wanted, *extra], keep=self.policy.keep_files)
            if reads_version:
                state.version = self._declared_version(state, contents)
                state.version_read = True
            for path in wanted:
                content = contents[path]
                state.digests[path] = content_digest(content)
                if content is None:  # not in this tree: the check decides what that means
                    state.modules[path] = None
                    continue
                indexed = self.indexes.index(content, path, str(case))
                if isinstance(indexed, Future):
                    state.parsing[path] = indexed
                else:
                    state.modules[path] = indexed

    def _declared_version(
        self, state: _CaseState, read: Mapping[str, bytes | None]
    ) -> Version | None:
        """What the tree declares; a file its packaging points at beyond those already read
        (``read``) is read through the tree too."""

        def read_one(path: str) -> bytes | None:
            return read[path] if path in read else self._read(state, [path])[path]

        return versions.parse(declared_version(state.tree.case.package, read_one))

    def _module(self, state: _CaseState, path: str) -> codeindex.Module | None:
        """The parsed module, waiting for it where a parse process has it in hand."""
        origin = str(state.tree.case)
        with state.lock:
            if path in state.modules:
                return state.modules[path]
            job = state.parsing[path]
        try:
            module = self.indexes.finish(job, path, origin)  # or the file's ParseError
        except InfrastructureError as exc:
            raise exc.again() from None  # one job serves many checks: a fresh error each
        except BrokenProcessPool:  # a parse process died (killed, out of memory)
            content = self._read(state, [path])[path]
            assert content is not None  # it was there when the job was handed out
            module = self.indexes.parse_here(content, path, origin)
        with state.lock:
            state.modules[path] = module
            state.parsing.pop(path, None)
        return module

    def _read(
        self, state: _CaseState, paths: Sequence[str], *, keep: bool = True
    ) -> dict[str, bytes | None]:
        """Read through the case's tree; a fetch that failed once fails fast for the rest
        of the run instead of retrying for every check of the case."""
        if (failure := state.failure) is not None:
            raise failure.again() from failure
        try:
            return state.tree.read(paths, keep=keep)
        except InfrastructureError as exc:
            state.failure = exc
            raise


def _then(first: Future[None], start: Callable[[], Future[None]]) -> Future[None]:
    """A future done when ``first`` and then the one ``start`` gives are: ``start`` is
    called once ``first`` is done (never blocking a pool thread on it); a failure of
    ``first`` is the chain's, and ``start`` is not called."""
    chained: Future[None] = Future()

    def settle(done: Future[None]) -> None:
        if done.cancelled():
            chained.cancel()
        elif (failure := done.exception()) is not None:
            chained.set_exception(failure)
        else:
            chained.set_result(None)

    def then(done: Future[None]) -> None:
        if done.cancelled() or done.exception() is not None:
            settle(done)
            return
        try:
            follow = start()
        except RuntimeError as exc:  # the pool was shut down (the run is closing)
            chained.set_exception(exc)
            return
        follow.add_done_callback(settle)

    first.add_done_callback(then)
    return chained


def _wait(pending: Future[None]) -> None:
    """Wait for a prefetch; its failure is raised afresh for every check that waits on it,
    caused by the original (never raised again, so its traceback stays the fetch's own)."""
    failure = pending.exception()
    if isinstance(failure, InfrastructureError):
        raise failure.again() from failure
    pending.result()  # anything else: as it came
