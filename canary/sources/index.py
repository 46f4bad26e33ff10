"""Released versions from the package index: the wheel, fetched by ``pip download``.

pip runs in a subprocess so the user's own configuration (index, mirrors, proxies,
certificates) decides where the wheel comes from; no registry host is written here.

A released wheel never changes, so with ``wheel_dir`` it is kept after the first download:
a check added later that reads another file of the same release costs a zip read, not a
second download of the whole wheel. It is moved into place only once complete, and a kept
wheel that no longer reads as a zip is deleted and downloaded again.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Sequence
from pathlib import Path

from canary.errors import FetchError, RefNotFound

_NOT_ON_INDEX = re.compile(
    r"No matching distribution found|Could not find a version that satisfies", re.IGNORECASE
)


class IndexSource:
    """One released version of a package, read from its wheel on the package index."""

    kind = "index"

    def __init__(
        self,
        package: str,
        version: str,
        *,
        wheel_dir: Path | None = None,
        pip: Sequence[str] = (sys.executable, "-m", "pip"),
        timeout: float = 900.0,
    ) -> None:
        self.package = package
        self.ref = version
        self.wheel_dir = wheel_dir
        self.pip = tuple(pip)
        self.timeout = timeout
        self.bytes_downloaded = 0

    @property
    def description(self) -> str:
        return f"{self.package} {self.ref} from the package index"

    @property
    def kept_wheel(self) -> Path | None:
        """Where this release's wheel is kept (whether or not it is there yet)."""
        if self.wheel_dir is None:
            return None
        return self.wheel_dir / self.package / f"{self.package}-{self.ref}.whl"

    @property
    def available_offline(self) -> bool:
        """Files can be read without the network: the wheel is already kept."""
        return self.kept_wheel is not None and self.kept_wheel.is_file()

    def fetch(self, paths: Sequence[str]) -> dict[str, bytes | None]:
        kept = self.kept_wheel
        if kept is not None and kept.is_file():
            try:
                return read_wheel_members(kept, paths, origin=self.description)
            except FetchError:  # damaged on disk: forget it and download it again
                with contextlib.suppress(OSError):
                    kept.unlink()
        if kept is None:
            with tempfile.TemporaryDirectory(prefix="canary-wheel-") as folder:
                wheel = self._download(Path(folder))
                self.bytes_downloaded += wheel.stat().st_size
                return read_wheel_members(wheel, paths, origin=self.description)
        kept.parent.mkdir(parents=True, exist_ok=True)
        # Downloaded beside its final place so the rename is atomic: a run killed
        # mid-download leaves only a temporary folder, never a wheel a later run trusts.
        with tempfile.TemporaryDirectory(prefix=".download-", dir=kept.parent) as folder:
            wheel = self._download(Path(folder))
            self.bytes_downloaded += wheel.stat().st_size
            found = read_wheel_members(wheel, paths, origin=self.description)
            os.replace(wheel, kept)
        return found

    def _download(self, folder: Path) -> Path:
        requirement = f"{self.package}=={self.ref}"
        command = [
            *self.pip,
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "--no-input",
            "--disable-pip-version-check",
            "--quiet",
            "--dest",
            str(folder),
            requirement,
        ]
        try:
            done = subprocess.run(
                command, capture_output=True, text=True, timeout=self.timeout, check=False
            )
        except OSError:  # missing or not executable
            raise FetchError(
                f"cannot run {self.pip[0]!r} to download {requirement}: is pip installed? "
                f"(canary fetches released versions with `pip download`)"
            ) from None
        except subprocess.TimeoutExpired:
            raise FetchError(
                f"`pip download {requirement}` did not finish within {self.timeout:.0f} s"
            ) from None
        if done.returncode != 0:
            tail = _tail(done.stderr or done.stdout)
            if "No module named pip" in tail:
                raise FetchError(
                    f"pip is not installed for {self.pip[0]}; install it "
                    f"(python -m ensurepip) so canary can download {requirement}"
                )
            if _NOT_ON_INDEX.search(tail):
                raise RefNotFound(
                    f"{requirement} has no wheel on the package index: is the version right? "
                    f"(pip said: {tail})"
                )
            raise FetchError(
                f"`pip download {requirement}` failed (exit {done.returncode}): {tail}"
            )
        wheels = sorted(folder.glob("*.whl"))
        if len(wheels) != 1:
            found = ", ".join(p.name for p in folder.iterdir()) or "nothing"
            raise FetchError(f"`pip download {requirement}` left {found} instead of one wheel")
        return wheels[0]


def read_wheel_members(
    wheel: Path, paths: Sequence[str], *, origin: str
) -> dict[str, bytes | None]:
    """The requested members of ``wheel`` (None for those it does not contain)."""
    try:
        with zipfile.ZipFile(wheel) as archive:
            names = set(archive.namelist())
            return {path: archive.read(path) if path in names else None for path in paths}
    except (zipfile.BadZipFile, OSError) as exc:
        raise FetchError(f"{origin}: {wheel.name} is not a readable wheel: {exc}") from None


def _tail(text: str, limit: int = 600) -> str:
    lines = [line for line in text.strip().splitlines() if not line.startswith("WARNING: Location")]
    return " | ".join(lines)[-limit:]
