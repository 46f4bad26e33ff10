"""Unit tests of canary.cache: round trips, damage detection, TTL, key safety, atomicity, locks."""

from __future__ import annotations

import multiprocessing
import sys
import threading
import time
from pathlib import Path

import platformdirs
import pytest

from canary import cache as cache_module
from canary.cache import Cache, FileKey
from canary.errors import CacheDamaged, WriteFailed

KEY = FileKey("index", "transformers", "5.5.4", "transformers/trainer.py")
SOURCE = b"class Trainer:\n    def compute_loss(self, model, inputs):\n        pass\n"


@pytest.fixture
def root(tmp_path) -> Path:
    return tmp_path / "cache"


@pytest.fixture
def cache(root) -> Cache:
    return Cache(root)


def entry_files(root: Path) -> list[Path]:
    return sorted(p for p in root.rglob("*") if p.is_file() and p.parent.name != "locks")


# --------------------------------------------------------------------------- round trips


@pytest.mark.parametrize("content", [SOURCE, b"", None], ids=["content", "empty file", "absent"])
def test_a_written_file_reads_back_as_written(cache, content):
    before = time.time()
    cache.write_file(KEY, content)

    entry = cache.read_file(KEY)

    assert entry is not None
    assert entry.content == content
    assert before <= entry.fetched_at <= time.time()


def test_an_unwritten_key_is_a_miss(cache):
    assert cache.read_file(KEY) is None


def test_a_rewrite_replaces_the_previous_entry(cache):
    cache.write_file(KEY, None)
    cache.write_file(KEY, SOURCE)

    assert cache.read_file(KEY).content == SOURCE
    assert len(entry_files(cache.root)) == 1


def test_keys_that_differ_in_any_field_do_not_share_an_entry(cache):
    keys = [
        KEY,
        FileKey("github", "transformers", "5.5.4", KEY.path),
        FileKey("index", "trl", "5.5.4", KEY.path),
        FileKey("index", "transformers", "5.5.3", KEY.path),
        FileKey("index", "transformers", "5.5.4", "transformers/trainer_utils.py"),
    ]
    for number, key in enumerate(keys):
        cache.write_file(key, f"file {number}".encode())

    assert [cache.read_file(key).content for key in keys] == [
        f"file {number}".encode() for number in range(len(keys))
    ]


def test_a_blob_reads_back_and_an_unknown_digest_is_a_miss(cache):
    cache.write_blob("codeindex-v1", "ab" * 32, b"\x80\x04pickled")

    assert cache.read_blob("codeindex-v1", "ab" * 32) == b"\x80\x04pickled"
    assert cache.read_blob("codeindex-v1", "cd" * 32) is None
    assert cache.read_blob("codeindex-v2", "ab" * 32) is None


def test_default_cache_dir_is_the_platforms_user_cache_folder(monkeypatch, tmp_path):
    monkeypatch.delenv("CANARY_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    # platformdirs: ~/Library/Caches on macOS, %LOCALAPPDATA% on Windows, XDG here.
    expected = Path(platformdirs.user_cache_dir("canary", appauthor=False))
    assert cache_module.default_cache_dir() == expected
    if sys.platform.startswith("linux"):
        assert expected == tmp_path / "xdg" / "canary"


def test_default_cache_dir_honours_canary_cache_dir(monkeypatch, tmp_path):
    monkeypatch.setenv("CANARY_CACHE_DIR", str(tmp_path / "here"))

    assert cache_module.default_cache_dir() == tmp_path / "here"


# ------------------------------------------------------------------------------- damage


def _truncate(raw: bytes) -> bytes:
    return raw[:-10]


def _garbage(raw: bytes) -> bytes:
    return b"\x00\xff not an entry at all\n" * 3


def _wrong_sha(raw: bytes) -> bytes:
    header, body = raw.split(b"\n", 1)
    return header.replace(b'"sha256": "', b'"sha256": "0') + b"\n" + body


def _edited_body(raw: bytes) -> bytes:
    return raw.replace(b"compute_loss", b"compute_LOSS")  # same length, other text


def _empty(raw: bytes) -> bytes:
    return b""


def _header_only_cut(raw: bytes) -> bytes:
    return raw.split(b"\n", 1)[0][:20]


def _body_on_absent(raw: bytes) -> bytes:
    return raw.split(b"\n", 1)[0].replace(b'"fetched_at"', b'"absent": true, "fetched_at"') + (
        b"\nsurprise"
    )


def _header_not_an_object(raw: bytes) -> bytes:
    return cache_module._MAGIC + b"[1, 2]\n" + raw.split(b"\n", 1)[1]


DAMAGE = [
    _truncate,
    _garbage,
    _wrong_sha,
    _edited_body,
    _empty,
    _header_only_cut,
    _body_on_absent,
    _header_not_an_object,
]


@pytest.mark.parametrize("damage", DAMAGE, ids=lambda f: f.__name__.strip("_"))
def test_a_damaged_entry_is_reported_naming_its_file_and_is_removed(cache, damage):
    cache.write_file(KEY, SOURCE)
    [path] = entry_files(cache.root)
    damaged = damage(path.read_bytes())
    assert damaged != path.read_bytes()
    path.write_bytes(damaged)

    # Damaged is not missing: the reader decides (refetch online, an error offline).
    with pytest.raises(CacheDamaged) as caught:
        cache.read_file(KEY)
    assert caught.value.path == str(path)
    assert str(path) in str(caught.value)
    assert not path.exists()
    assert cache.read_file(KEY) is None  # removed: a plain miss from now on

    cache.write_file(KEY, SOURCE)
    assert cache.read_file(KEY).content == SOURCE


def test_a_damaged_blob_is_a_miss(cache):
    cache.write_blob("codeindex-v1", "ab" * 32, b"payload")
    [path] = entry_files(cache.root)
    path.write_bytes(_truncate(path.read_bytes()))

    assert cache.read_blob("codeindex-v1", "ab" * 32) is None
    assert not path.exists()


# ----------------------------------------------------------------------------------- TTL


@pytest.mark.parametrize(
    ("age", "hit"), [(59.0, True), (61.0, False)], ids=["younger than TTL", "older than TTL"]
)
def test_max_age_turns_an_old_entry_into_a_miss(cache, monkeypatch, age, hit):
    cache.write_file(KEY, SOURCE)
    written_at = cache.read_file(KEY).fetched_at
    monkeypatch.setattr(cache_module.time, "time", lambda: written_at + age)

    assert (cache.read_file(KEY, max_age=60) is not None) is hit
    assert cache.read_file(KEY) is not None  # no TTL: released files never expire


# ------------------------------------------------------------------------------ key safety

ODD_KEYS = {
    "ref with a slash": FileKey("github", "trl", "feature/x", "trl/core.py"),
    "ref with a percent": FileKey("github", "trl", "feature%2Fx", "trl/core.py"),
    "empty ref": FileKey("github", "trl", "", "trl/core.py"),
    "path with odd characters": FileKey("github", "trl", "main", "trl/a b?c#d:e*.py"),
    "ref is dot-dot": FileKey("github", "trl", "..", "x.py"),
    "path with dot-dot components": FileKey("github", "trl", "main", "../../../../../escaped"),
    "path with a dot component": FileKey("github", "trl", "main", "./trl/core.py"),
}


@pytest.mark.parametrize("key", ODD_KEYS.values(), ids=ODD_KEYS.keys())
def test_an_odd_key_gets_its_own_entry_inside_its_package_folder(tmp_path, key):
    cache = Cache(tmp_path / "cache")
    neighbour = FileKey(key.source, key.package, "main", "trl/core.py")
    cache.write_file(neighbour, b"neighbour")

    cache.write_file(key, b"odd")

    package_folder = (cache.root / "files" / key.source / key.package).resolve()
    written = sorted(p.resolve() for p in tmp_path.rglob("*.entry"))
    assert len(written) == 2
    assert all(path.is_relative_to(package_folder) for path in written)
    assert cache.read_file(key).content == b"odd"
    assert cache.read_file(neighbour).content == b"neighbour"


# ----------------------------------------------------------------------------- atomicity


def test_a_write_that_fails_before_the_rename_leaves_no_entry_and_no_temp_file(cache, monkeypatch):
    def fail(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(cache_module.os, "replace", fail)

    with pytest.raises(WriteFailed, match="disk full"):
        cache.write_file(KEY, SOURCE)

    assert entry_files(cache.root) == []
    monkeypatch.undo()
    assert cache.read_file(KEY) is None


def test_a_failed_overwrite_keeps_the_previous_entry(cache, monkeypatch):
    cache.write_file(KEY, SOURCE)

    def interrupt(src, dst):
        raise KeyboardInterrupt

    monkeypatch.setattr(cache_module.os, "replace", interrupt)
    with pytest.raises(KeyboardInterrupt):
        cache.write_file(KEY, b"half of something new")
    monkeypatch.undo()

    assert cache.read_file(KEY).content == SOURCE
    assert len(entry_files(cache.root)) == 1


def test_a_temp_file_left_by_a_killed_writer_is_never_read_as_an_entry(cache, monkeypatch):
    monkeypatch.setattr(cache_module.os, "replace", lambda src, dst: None)  # killed pre-rename
    cache.write_file(KEY, SOURCE)
    monkeypatch.undo()
    [leftover] = entry_files(cache.root)
    assert leftover.name.startswith(".trainer.py.entry.")  # hidden, never an entry name

    assert cache.read_file(KEY) is None


def test_concurrent_writers_of_one_key_never_leave_an_entry_that_reads_wrong(cache):
    contents = [bytes([65 + n]) * (20_000 + n) for n in range(8)]
    cache.write_file(KEY, contents[0])
    bad_reads: list[object] = []
    stop = threading.Event()

    def write(content: bytes) -> None:
        for _ in range(25):
            cache.write_file(KEY, content)

    def read() -> None:
        while not stop.is_set():
            entry = cache.read_file(KEY)
            if entry is None or entry.content not in contents:
                bad_reads.append(entry)

    readers = [threading.Thread(target=read) for _ in range(2)]
    writers = [threading.Thread(target=write, args=(c,)) for c in contents]
    for thread in readers + writers:
        thread.start()
    for thread in writers:
        thread.join()
    stop.set()
    for thread in readers:
        thread.join()

    assert bad_reads == []
    assert cache.read_file(KEY).content in contents
    assert len(entry_files(cache.root)) == 1  # no temp file left behind


# --------------------------------------------------------------------------------- locks


def _hold_lock(root: str, log: str, lock_name: str, tag: str, barrier) -> None:
    barrier.wait()
    with Cache(Path(root)).lock(lock_name):
        with open(log, "a") as stream:
            stream.write(f"start {tag}\n")
        time.sleep(0.15)
        with open(log, "a") as stream:
            stream.write(f"end {tag}\n")


def _run_two_lock_holders(tmp_path: Path, names: tuple[str, str]) -> list[str]:
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    context = multiprocessing.get_context(method)
    barrier = context.Barrier(2)
    log = tmp_path / "log.txt"
    workers = [
        context.Process(
            target=_hold_lock, args=(str(tmp_path / "cache"), str(log), name, tag, barrier)
        )
        for name, tag in zip(names, "ab", strict=True)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=30)
        assert worker.exitcode == 0
    return log.read_text().split()[0::2]


def test_the_lock_serialises_two_processes(tmp_path):
    events = _run_two_lock_holders(tmp_path, ("x", "x"))

    assert events == ["start", "end", "start", "end"]


def test_locks_with_different_names_do_not_block_each_other(tmp_path):
    events = _run_two_lock_holders(tmp_path, ("x", "y"))

    assert events == ["start", "start", "end", "end"]


def test_the_lock_serialises_two_threads(cache):
    inside = 0
    most_inside = 0
    guard = threading.Lock()

    def hold() -> None:
        nonlocal inside, most_inside
        with cache.lock("x"):
            with guard:
                inside += 1
                most_inside = max(most_inside, inside)
            time.sleep(0.05)
            with guard:
                inside -= 1

    threads = [threading.Thread(target=hold) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert most_inside == 1
