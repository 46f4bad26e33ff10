"""Files written whole or not at all: a temporary file in the same folder, flushed, then
renamed over the old one, so a full disk, a read-only folder or a killed run never loses it.

A failure is one :class:`~canary.errors.WriteFailed` naming the path and the cause (``No
space left on device``); the temporary file is removed and the previous file is untouched.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import BinaryIO

from canary.errors import WriteFailed


@contextlib.contextmanager
def writing(path: Path, *, where: Path | None = None) -> Iterator[None]:
    """An ``OSError`` in the block (a folder made, a file written under ``path``) as one
    :class:`WriteFailed`; its cause names ``where`` (the cache folder), so a thousand cases
    that hit the same read-only cache group into one line."""
    try:
        yield
    except OSError as exc:
        raise WriteFailed.of(path, exc, where=where) from None


def write_atomically(
    path: Path, data: str | bytes, *, private: bool = False, where: Path | None = None
) -> None:
    """``data`` (text is UTF-8) at ``path``. The file gets the permissions any file this
    user writes gets (the umask decides), or 0600 with ``private`` (cache entries);
    ``where``: the folder a failure's cause names (default: the file's own)."""
    body = data.encode("utf-8") if isinstance(data, str) else data
    temporary = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name[:40]}.")
        if not private:  # mkstemp makes it 0600; a report is read by CI steps, colleagues
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(temporary, 0o666 & ~umask)
        with _open(fd, temporary) as stream:
            stream.write(body)
            stream.flush()
        os.replace(temporary, path)
        temporary = None
    except OSError as exc:
        raise WriteFailed.of(path, exc, where=where, replacing=True) from None
    finally:
        if temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(temporary)


def _open(fd: int, path: str) -> BinaryIO:
    """The temporary file to write (a test stands a full disk in here, by ``path``)."""
    return os.fdopen(fd, "wb")
