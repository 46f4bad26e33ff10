"""Workspace, trees and snapshots: fetch once, parse once, errors by kind."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

import pytest
from packaging.version import Version

from canary.cache import Cache
from canary.catalog import Window, check
from canary.errors import Drift, FetchError, OfflineMiss, ParseError
from canary.workspace import Case, FetchPolicy, Workspace

CORE = b"class Engine:\n    def run(self, steps, *, num_items_in_batch=None):\n        pass\n"


class FakeSource:
    """A source that counts what it is asked for."""

    def __init__(self, case: Case, files: dict[str, bytes], *, fail: bool = False) -> None:
        self.package, self.ref = case.package, case.label
        self.files = files
        self.fail = fail
        self.requests: list[tuple[str, ...]] = []
        self._lock = threading.Lock()

    @property
    def description(self) -> str:
        return f"{self.package} {self.ref} from the fake"

    def fetch(self, paths: Sequence[str]) -> dict[str, bytes | None]:
        with self._lock:
            self.requests.append(tuple(paths))
        if self.fail:
            raise FetchError(f"{self.description}: connection reset")
        return {path: self.files.get(path) for path in paths}


class Upstreams:
    """Hands out one FakeSource per case; cases share files unless told otherwise."""

    def __init__(self, files: dict[str, bytes]) -> None:
        self.files = files
        self.sources: dict[Case, FakeSource] = {}
        self.failing: set[Case] = set()

    def __call__(self, case: Case) -> FakeSource:
        source = FakeSource(case, self.files, fail=case in self.failing)
        self.sources[case] = source
        return source

    def fetched(self, case: Case, path: str = "toy/core.py") -> int:
        """How often the current source of ``case`` was asked for ``path``."""
        source = self.sources.get(case)
        return sum(path in request for request in source.requests) if source else 0


@pytest.fixture
def upstreams() -> Upstreams:
    return Upstreams({"toy/core.py": CORE, "toy/__init__.py": b'__version__ = "3.1.0.dev0"\n'})


@pytest.fixture
def cache(tmp_path: Path) -> Cache:
    return Cache(tmp_path / "cache")


def workspace(upstreams: Upstreams, cache: Cache, **policy: bool) -> Workspace:
    return Workspace(upstreams, cache, FetchPolicy(**policy))


RELEASE = Case("toy", "1.0.0", "index")
NEXT = Case("toy", "1.0.1", "index")
MAIN = Case("toy", "main", "github")


def test_case_ids_put_underscores_for_dots():
    assert RELEASE.id == "toy_1_0_0"
    assert MAIN.id == "toy_main"
    assert RELEASE.known_version == Version("1.0.0")
    assert MAIN.known_version is None
    assert RELEASE.commit is None
    assert MAIN.commit is None
    replayed = Case("toy", "a" * 40, "github")
    assert replayed.commit == "a" * 40
    assert replayed.known_version is None


def test_a_release_is_fetched_once_and_parsed_once_ever(upstreams, cache):
    first = workspace(upstreams, cache).snapshot(RELEASE, ["toy/core.py", "toy/gone.py"])
    assert first.module("toy/core.py").cls("Engine").has_method("run")
    assert not first.has_file("toy/gone.py")

    again = workspace(upstreams, cache)
    snapshot = again.snapshot(RELEASE, ["toy/core.py", "toy/gone.py"])
    assert snapshot.module("toy/core.py").cls("Engine").has_method("run")
    assert upstreams.fetched(RELEASE) == 0  # the second workspace made a new source: unused
    assert again.stats.files_from_cache == 2
    assert again.stats.modules_parsed == 0
    assert again.stats.modules_from_cache == 1


@pytest.mark.parametrize("collecting", [True, False])
def test_parsing_and_loading_an_index_leave_the_garbage_collector_as_it_was(
    upstreams, cache, collecting
):
    """Parsing and unpickling turn the collector off for their length only: a run whose
    collector was on keeps it on (else a long run would grow without bound), one that had it
    off keeps it off."""
    import gc

    first, again = workspace(upstreams, cache), workspace(upstreams, cache)
    if not collecting:
        gc.disable()
    try:
        first.snapshot(RELEASE, ["toy/core.py"])
        assert gc.isenabled() is collecting
        snapshot = again.snapshot(RELEASE, ["toy/core.py"])
        assert gc.isenabled() is collecting
    finally:
        gc.enable()
    assert (first.stats.modules_parsed, again.stats.modules_from_cache) == (1, 1)
    assert snapshot.module("toy/core.py").cls("Engine").has_method("run")


def test_identical_files_in_two_releases_parse_once_and_name_their_own_release(upstreams, cache):
    space = workspace(upstreams, cache)
    space.snapshot(RELEASE, ["toy/core.py"])
    later = space.snapshot(NEXT, ["toy/core.py"])
    assert space.stats.modules_parsed == 1
    with pytest.raises(Drift, match=r"toy 1\.0\.1"):
        later.module("toy/core.py").cls("Engine").method("walk")


def test_a_file_missing_upstream_is_drift(upstreams, cache):
    snapshot = workspace(upstreams, cache).snapshot(RELEASE, ["toy/gone.py"])
    with pytest.raises(Drift, match=r"toy/gone.py does not exist in toy 1\.0\.0"):
        snapshot.module("toy/gone.py")


def test_first_existing_accepts_code_that_moved(upstreams, cache):
    snapshot = workspace(upstreams, cache).snapshot(RELEASE, ["toy/old.py", "toy/core.py"])
    assert snapshot.first_existing("toy/old.py", "toy/core.py").path == "toy/core.py"
    with pytest.raises(Drift, match=r"none of toy/old\.py, toy/gone\.py"):
        workspace(upstreams, cache).snapshot(RELEASE, ["toy/old.py", "toy/gone.py"]).first_existing(
            "toy/old.py", "toy/gone.py"
        )


def test_offline_never_calls_the_source_and_a_miss_is_an_error(upstreams, cache):
    with pytest.raises(OfflineMiss, match=r"--canary-offline: toy 1\.0\.0 from the fake"):
        workspace(upstreams, cache, offline=True).snapshot(RELEASE, ["toy/core.py"])
    assert upstreams.fetched(RELEASE) == 0


def test_offline_reads_a_source_that_has_its_files_on_disk(upstreams, cache):
    # A kept wheel: a file no earlier run asked for is still readable offline.
    def kept(case: Case) -> FakeSource:
        source = upstreams(case)
        source.available_offline = True
        return source

    space = Workspace(kept, cache, FetchPolicy(offline=True))
    assert space.snapshot(RELEASE, ["toy/core.py"]).has_file("toy/core.py")
    assert upstreams.fetched(RELEASE) == 1


def test_without_file_entries_a_release_kept_whole_is_read_there_and_cached_nowhere(
    upstreams, cache
):
    # An index source that keeps the wheel once downloaded: a reader that remembers what
    # it derives (the surface) writes no entry per file, present or absent.
    def kept(case: Case) -> FakeSource:
        source = upstreams(case)
        source.keeps_release = True
        return source

    space = Workspace(kept, cache, FetchPolicy(keep_files=False))
    found = space.snapshot(RELEASE, ["toy/core.py", "toy/gone.py"])
    assert found.has_file("toy/core.py")
    assert not found.has_file("toy/gone.py")
    assert not (cache.root / "files").exists()
    # The static tier's policy (the default) keeps an entry for each, as before.
    workspace(upstreams, cache).snapshot(RELEASE, ["toy/core.py", "toy/gone.py"])
    assert len(list((cache.root / "files").rglob("*.entry"))) == 2


def test_offline_without_the_release_on_disk_still_reads_the_file_entries(upstreams, cache):
    workspace(upstreams, cache).snapshot(RELEASE, ["toy/core.py"])

    def not_kept_yet(case: Case) -> FakeSource:
        source = upstreams(case)
        source.keeps_release = True  # but not available offline: nothing on disk
        return source

    space = Workspace(not_kept_yet, cache, FetchPolicy(offline=True, keep_files=False))
    assert space.snapshot(RELEASE, ["toy/core.py"]).has_file("toy/core.py")
    assert upstreams.fetched(RELEASE) == 0  # served by the entry, the source never asked


def test_a_fetch_failure_propagates_and_caches_nothing(upstreams, cache):
    upstreams.failing.add(RELEASE)
    with pytest.raises(FetchError):
        workspace(upstreams, cache).snapshot(RELEASE, ["toy/core.py"])
    upstreams.failing.clear()
    snapshot = workspace(upstreams, cache).snapshot(RELEASE, ["toy/core.py"])
    assert snapshot.has_file("toy/core.py")


def test_an_unparsable_file_is_a_parse_error_naming_file_and_case(cache):
    broken = Upstreams({"toy/core.py": b"def (:\n"})
    with pytest.raises(ParseError, match=r"toy/core.py.*toy 1\.0\.0"):
        workspace(broken, cache).snapshot(RELEASE, ["toy/core.py"])


def test_main_reads_its_version_from_the_tree(upstreams, cache):
    assert workspace(upstreams, cache).version(MAIN) == Version("3.1.0.dev0")


def test_main_expires_after_its_ttl_and_on_refresh(upstreams, cache, monkeypatch):
    workspace(upstreams, cache).snapshot(MAIN, ["toy/core.py"])
    assert upstreams.fetched(MAIN) == 1
    workspace(upstreams, cache).snapshot(MAIN, ["toy/core.py"])
    assert upstreams.fetched(MAIN) == 0  # fresh: the new workspace's source was never asked
    workspace(upstreams, cache, refresh=True).snapshot(MAIN, ["toy/core.py"])
    assert upstreams.fetched(MAIN) == 1
    import canary.cache

    later = canary.cache.time.time() + 7 * 3600
    monkeypatch.setattr(canary.cache.time, "time", lambda: later)
    workspace(upstreams, cache).snapshot(MAIN, ["toy/core.py"])
    assert upstreams.fetched(MAIN) == 1


def test_offline_uses_an_expired_main_rather_than_failing(upstreams, cache, monkeypatch):
    workspace(upstreams, cache).snapshot(MAIN, ["toy/core.py"])
    import canary.cache

    later = canary.cache.time.time() + 7 * 3600
    monkeypatch.setattr(canary.cache.time, "time", lambda: later)
    snapshot = workspace(upstreams, cache, offline=True).snapshot(MAIN, ["toy/core.py"])
    assert snapshot.has_file("toy/core.py")


def test_prefetch_loads_each_case_once_even_when_checks_race_it(upstreams, cache):
    space = workspace(upstreams, cache)
    cases = [Case("toy", f"1.0.{n}", "index") for n in range(6)]
    space.prefetch({case: {"toy/core.py"} for case in cases})
    threads = [
        threading.Thread(target=space.snapshot, args=(case, ["toy/core.py"]))
        for case in cases
        for _ in range(3)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(upstreams.fetched(case) == 1 for case in cases)
    space.close()


def test_a_failed_prefetch_is_the_error_of_that_case_only(upstreams, cache):
    space = workspace(upstreams, cache)
    upstreams.failing.add(NEXT)
    space.prefetch({RELEASE: {"toy/core.py"}, NEXT: {"toy/core.py"}})
    assert space.snapshot(RELEASE, ["toy/core.py"]).has_file("toy/core.py")
    with pytest.raises(FetchError):
        space.snapshot(NEXT, ["toy/core.py"])
    space.close()


def test_a_check_must_declare_what_it_reads(upstreams, cache):
    snapshot = workspace(upstreams, cache).snapshot(RELEASE, ["toy/core.py"])
    with pytest.raises(KeyError, match="add it to reads="):
        snapshot.module("toy/other.py")


@pytest.mark.parametrize(
    ("window", "version", "excluded"),
    [
        (Window(since="1.1.0"), Version("1.0.9"), True),
        (Window(since="1.1.0"), Version("1.1.0"), False),
        (Window(until="2.0.0"), Version("2.0.0"), True),
        # PEP 440: a pre-release of the bound is already past "<2.0.0".
        (Window(until="2.0.0"), Version("2.0.0.dev0"), True),
        (Window(since="1.1.0", until="2.0.0"), Version("1.5.0"), False),
        (Window(since="1.1.0"), None, False),  # an unreadable main counts as newest
        (Window(until="2.0.0"), None, True),
    ],
)
def test_windows_include_since_and_exclude_until(window, version, excluded):
    assert window.excludes(version) is excluded


def test_a_check_needs_a_docstring_and_a_known_fix():
    with pytest.raises(KeyError, match="unknown fix"):
        check(reads="x.py", fix="no such fix")
    with pytest.raises(ValueError, match="needs a docstring"):
        check(reads="x.py", fix="chunked NLL loss")(lambda upstream: None)
    with pytest.raises(ValueError, match="at least one upstream file"):
        check(reads=[], fix="chunked NLL loss")


def test_a_failed_fetch_is_not_retried_by_every_check_of_the_case(upstreams, cache):
    upstreams.failing.add(MAIN)
    space = workspace(upstreams, cache)
    for _ in range(3):
        with pytest.raises(FetchError):
            space.snapshot(MAIN, ["toy/core.py"])
    assert len(upstreams.sources[MAIN].requests) == 1
