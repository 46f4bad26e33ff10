"""A wheel unpacked for reading: only its ``.py`` files and ``*.dist-info/METADATA``,
member by member, within limits on count, size and compression ratio.

A wheel is outside input (a target named on a command line, a file a user hands over): a
member path is checked part by part and joined under the staging folder, so nothing can be
written outside it; the tree appears under its final name only once complete (a rename),
and a refused wheel leaves nothing behind.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import tempfile
import zipfile
from dataclasses import dataclass
from pathlib import Path

from canary.atomic import writing
from canary.errors import FetchError

_CHUNK = 1 << 16


@dataclass(frozen=True)
class Limits:
    """What a wheel may hold. transformers 5.x, the largest upstream wheel, has ~2,300
    members, 40 MB of .py files, its largest 0.5 MB, and compresses them 4-6 to 1."""

    members: int = 100_000
    member_bytes: int = 64 << 20
    total_bytes: int = 1 << 30
    ratio: int = 100  # uncompressed per compressed byte, for a member over ratio_from
    ratio_from: int = 1 << 20


LIMITS = Limits()


class WheelRefused(FetchError):
    """A wheel that breaks a limit or names a path outside itself."""


def wanted(name: str) -> bool:
    """What extraction reads: Python files and the wheel's metadata."""
    parts = name.split("/")
    if len(parts) == 2 and parts[0].endswith(".dist-info"):
        return parts[1] == "METADATA"
    return name.endswith(".py")


def unpacked(wheel: Path, into: Path, limits: Limits = LIMITS) -> Path:
    """``wheel`` unpacked under ``into`` (once per content: a rebuilt wheel of the same name
    is unpacked again); raises :class:`WheelRefused` or ``FetchError``."""
    folder = into / f"{_stem(wheel)}-{_digest(wheel)}"
    if folder.is_dir():
        return folder
    with writing(folder, where=into):
        into.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=".unpack-", dir=into))
    try:
        with writing(folder, where=into):
            _unpack(wheel, staging, limits)
            try:
                os.replace(staging, folder)
            except OSError:
                if not folder.is_dir():  # another run unpacked it first: theirs is as good
                    raise
    except zipfile.BadZipFile as exc:
        raise FetchError(f"{wheel} is not a readable wheel: {exc}") from None
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return folder


def _unpack(wheel: Path, staging: Path, limits: Limits) -> None:
    with zipfile.ZipFile(wheel) as archive:
        members = archive.infolist()
        if len(members) > limits.members:
            raise WheelRefused(
                f"{wheel}: {len(members):,} members, over the limit of {limits.members:,}: "
                f"refused, nothing unpacked",
                cause="a wheel over canary's limits",
            )
        total = 0
        for info in members:
            if info.is_dir() or not wanted(info.filename):
                continue
            target = staging.joinpath(*_parts(wheel, info.filename))
            _check_sizes(wheel, info, limits)
            target.parent.mkdir(parents=True, exist_ok=True)
            with archive.open(info) as source, open(target, "xb") as sink:
                written = 0
                while chunk := source.read(_CHUNK):
                    written += len(chunk)
                    total += len(chunk)
                    if written > limits.member_bytes or total > limits.total_bytes:
                        over = "member" if written > limits.member_bytes else "total"
                        raise WheelRefused(
                            f"{wheel}: {info.filename!r} takes the {over} unpacked over "
                            f"canary's limit: refused, nothing unpacked",
                            cause="a wheel over canary's limits",
                        )
                    sink.write(chunk)


def _check_sizes(wheel: Path, info: zipfile.ZipInfo, limits: Limits) -> None:
    size, packed = info.file_size, max(info.compress_size, 1)
    why = None
    if size > limits.member_bytes:
        why = f"{size:,} bytes, over the limit of {limits.member_bytes:,}"
    elif size > limits.ratio_from and size > limits.ratio * packed:
        why = f"{size:,} bytes from {packed:,} compressed, over {limits.ratio}:1"
    if why is not None:
        raise WheelRefused(
            f"{wheel}: member {info.filename!r} unpacks to {why} (a zip bomb?): refused, "
            f"nothing unpacked",
            cause="a wheel over canary's limits",
        )


def _parts(wheel: Path, name: str) -> list[str]:
    """``name``'s parts, each a plain file name: never absolute, never '..', no drive."""
    parts = name.split("/")
    if any(p in ("", ".", "..") or "\\" in p or "\0" in p or ":" in p for p in parts):
        raise WheelRefused(
            f"{wheel}: member {name!r} points outside the wheel: refused, nothing unpacked",
            cause="a wheel with a member outside itself",
        )
    return parts


def _stem(wheel: Path) -> str:
    stem = re.sub(r"[^A-Za-z0-9._+-]", "_", wheel.name.removesuffix(".whl")).lstrip(".")
    return stem[:100] or "wheel"


def _digest(wheel: Path) -> str:
    digest = hashlib.sha256()
    with open(wheel, "rb") as stream:
        while block := stream.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()[:16]
