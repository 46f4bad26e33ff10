"""Files are written whole or not at all: a full disk (a simulated ENOSPC) or a folder that
refuses the file is one line naming the path and the cause, and the previous file stays."""

from __future__ import annotations

import errno
import io
import os
from pathlib import Path

import pytest

from canary import atomic
from canary.cache import Cache, FileKey
from canary.errors import WriteFailed
from canary.surface.baseline import load_baseline, write_baseline


class FullDisk(io.FileIO):
    """A file whose folder runs out of room after ``room`` bytes."""

    room = 4

    def write(self, data) -> int:
        if self.tell() + len(data) > self.room:
            super().write(bytes(data)[: self.room - self.tell()])
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return super().write(data)


def full_disk(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    """Every file written in ``folder`` hits a full disk; other folders are unaffected."""
    real = atomic._open

    def opened(fd: int, path: str):
        if Path(path).parent == folder:
            return FullDisk(fd, "wb", closefd=True)
        return real(fd, path)

    monkeypatch.setattr(atomic, "_open", opened)


def test_a_full_disk_keeps_the_previous_file_and_says_so_in_one_line(tmp_path, monkeypatch):
    target = tmp_path / "report.json"
    target.write_text("previous report\n")
    full_disk(monkeypatch, tmp_path)
    with pytest.raises(WriteFailed) as raised:
        atomic.write_atomically(target, "a much longer new report\n")
    message = str(raised.value)
    assert message == (
        f"cannot write {target}: No space left on device (nothing was replaced: a previous "
        f"file is intact)"
    )
    assert raised.value.cause == f"cannot write under {tmp_path}: No space left on device"
    assert target.read_text() == "previous report\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["report.json"]  # no temporary left


def test_a_folder_that_refuses_the_file_is_one_line(tmp_path, monkeypatch):
    def refused(*args, **kwargs):
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES))

    monkeypatch.setattr(atomic.tempfile, "mkstemp", refused)
    with pytest.raises(WriteFailed, match=r"cannot write .*out\.md: Permission denied"):
        atomic.write_atomically(tmp_path / "out.md", "x")


def test_a_file_in_place_of_the_folder_is_one_line(tmp_path):
    (tmp_path / "plain").write_text("")
    with pytest.raises(WriteFailed, match=r"cannot write .*plain/x: "):
        atomic.write_atomically(tmp_path / "plain" / "x", "x")


def test_a_baseline_on_a_full_disk_keeps_the_old_one(tmp_path, monkeypatch):
    path = tmp_path / "baseline.json"
    write_baseline(path, {"toy": ("1.0",)}, ())
    before = path.read_text()
    full_disk(monkeypatch, tmp_path)
    with pytest.raises(WriteFailed):
        write_baseline(path, {"toy": ("1.0", "2.0")}, ())
    assert path.read_text() == before
    assert load_baseline(path) is not None


def test_a_cache_entry_on_a_full_disk_is_not_half_written(tmp_path, monkeypatch):
    cache = Cache(tmp_path)
    key = FileKey("index", "toy", "1.0", "toy/a.py")
    cache.write_file(key, b"old = 1\n")
    entry_folder = tmp_path / "files" / "index" / "toy" / "1.0" / "toy"
    full_disk(monkeypatch, entry_folder)
    with pytest.raises(WriteFailed, match="No space left on device"):
        cache.write_file(key, b"new = 2\n" * 100)
    assert cache.read_file(key).content == b"old = 1\n"


def test_permissions_follow_the_umask_except_for_private_files(tmp_path):
    old = os.umask(0o022)
    try:
        atomic.write_atomically(tmp_path / "shared", "x")
        atomic.write_atomically(tmp_path / "private", b"x", private=True)
    finally:
        os.umask(old)
    assert (tmp_path / "shared").stat().st_mode & 0o777 == 0o644
    assert (tmp_path / "private").stat().st_mode & 0o777 == 0o600
