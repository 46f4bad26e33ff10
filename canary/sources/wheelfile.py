"""A kept wheel's files, read by offset from its directory, read once.

``zipfile.ZipFile`` reads a wheel's central directory every time it is opened (30 ms for
transformers' 2,300 files), and holding it open holds a file descriptor. A run over every
release reads each wheel a few times, minutes apart, and a platform may allow only 256
open files: :class:`WheelDirectory` keeps what the directory says of each file (where it
starts, its sizes, CRC-32 and compression) and reads a file by opening the wheel, seeking
to it and inflating it, as ``ZipFile.open`` does, checking the local header's signature
and the CRC-32 of what comes out. A file stored another way than plain or deflated (no
wheel builder does that) is read by ``zipfile`` itself.
"""

from __future__ import annotations

import struct
import zipfile
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

_LOCAL_HEADER = struct.Struct("<4s2B4HL2L2H")  # zipfile's structFileHeader
_LOCAL_SIGNATURE = b"PK\x03\x04"
_READABLE = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED)


@dataclass(frozen=True, slots=True)
class Member:
    """One file as the central directory describes it."""

    offset: int  # of its local header
    compressed: int
    size: int
    crc: int
    method: int

    @property
    def fingerprint(self) -> str:
        """``CRC-32:size``: the same at the same path in two wheels is the same file."""
        return f"{self.crc:08x}:{self.size}"


class WheelDirectory:
    """What a wheel holds, read from its central directory once; raises
    ``zipfile.BadZipFile`` or ``OSError`` for a file that is no readable zip."""

    def __init__(self, wheel: Path) -> None:
        self.wheel = wheel
        with zipfile.ZipFile(wheel) as archive:
            self.members = {
                info.filename: Member(
                    info.header_offset,
                    info.compress_size,
                    info.file_size,
                    info.CRC,
                    # an encrypted file: zipfile says why it cannot be read
                    -1 if info.flag_bits & 0x1 else info.compress_type,
                )
                for info in archive.infolist()
                if not info.is_dir()
            }
        self.names = frozenset(self.members)

    def read(self, paths: Sequence[str]) -> dict[str, bytes | None]:
        """Each path's bytes, None for a path the wheel does not hold; raises
        ``zipfile.BadZipFile`` where a file's bytes are not what the directory says."""
        found: dict[str, bytes | None] = dict.fromkeys(paths)
        wanted = [path for path in paths if path in self.members]
        if not wanted:
            return found
        with self.wheel.open("rb") as stream:
            for path in wanted:
                found[path] = self._read_one(stream, path)
        return found

    def _read_one(self, stream: BinaryIO, path: str) -> bytes:
        member = self.members[path]
        if member.method not in _READABLE:
            with zipfile.ZipFile(self.wheel) as archive:
                return archive.read(path)
        stream.seek(member.offset)
        header = stream.read(_LOCAL_HEADER.size)
        if len(header) != _LOCAL_HEADER.size:
            raise zipfile.BadZipFile(f"{path}: truncated local header")
        fields = _LOCAL_HEADER.unpack(header)
        if fields[0] != _LOCAL_SIGNATURE:
            raise zipfile.BadZipFile(f"{path}: bad local header signature")
        name_length, extra_length = fields[-2], fields[-1]
        stream.seek(name_length + extra_length, 1)
        raw = stream.read(member.compressed)
        if len(raw) != member.compressed:
            raise zipfile.BadZipFile(f"{path}: truncated")
        try:
            content = raw if member.method == zipfile.ZIP_STORED else zlib.decompress(raw, -15)
        except zlib.error as exc:
            raise zipfile.BadZipFile(f"{path}: {exc}") from None
        if len(content) != member.size or zlib.crc32(content) != member.crc:
            raise zipfile.BadZipFile(f"{path}: CRC-32 or size does not match its directory")
        return content
