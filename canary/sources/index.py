"""Released versions from the package index: the wheel, fetched by ``pip download``.

pip runs in a subprocess so the user's own configuration (index, mirrors, proxies,
certificates) decides where the wheel comes from; no registry host is written here.

A released wheel never changes, so with ``wheel_dir`` it is kept after the first download:
a check added later that reads another file of the same release costs a zip read, not a
second download of the whole wheel. It is moved into place only once complete, and a kept
wheel that no longer reads as a zip is deleted and downloaded again (offline: an error
naming it; pip is never started offline).

When pip cannot reach the index at all (its output says why: :mod:`canary.sources.pipfailure`),
a few failures in a row call the index down for the rest of the run, and every later
release fails at once with the same reason instead of paying pip's retries again.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import tempfile
import threading
import zipfile
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

from packaging.utils import canonicalize_name

from canary.atomic import writing
from canary.errors import CacheDamaged, FetchError, IndexUnreachable, OfflineMiss, RefNotFound
from canary.sources import folder_index, pin, pipfailure
from canary.sources.health import HostHealth
from canary.sources.piprun import run_pip
from canary.sources.wheelfile import WheelDirectory

# The index as HostHealth sees it: pip hides which host it tried, so the index is one "host".
INDEX = "the package index"
# Failures in a row that call the index down: pip already retried each one.
DOWN_AFTER = 3
# One per process, as GitHub's HOSTS: a pytest run (or an xdist worker) is one process.
INDEX_HEALTH = HostHealth()
# canary reads wheels only: building an sdist runs its code, which a target never is.
_SDIST_ONLY = "unpack the .tar.gz and pass its folder as the target (canary never builds one)."


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
        offline: bool = False,
        health: HostHealth | None = None,
        ignore_requires_python: bool = False,
    ) -> None:
        self.package = package
        self.ref = version
        self.wheel_dir = wheel_dir
        self.pip = tuple(pip)
        self.timeout = timeout
        self.offline = offline
        self.health = health if health is not None else INDEX_HEALTH
        # The wheel is read, never installed: a release for a newer Python than this one
        # reads as well (pip skips it otherwise, and says "no matching distribution").
        self.ignore_requires_python = ignore_requires_python
        self.bytes_downloaded = 0
        # The kept wheel's folders, once listed: a walk lists hundreds of them, and the
        # wheel of a release never changes (a damaged one is forgotten with it).
        self._folders: Mapping[str, list[str]] | None = None

    @property
    def description(self) -> str:
        return f"{self.package} {self.ref} from the package index"

    @property
    def kept_wheel(self) -> Path | None:
        """Where this release's wheel is kept (whether or not it is there yet)."""
        if self.wheel_dir is None or pin.problem(self.package, self.ref) is not None:
            return None  # never a path built from text that is no name and version
        # the index's own spelling of the name: FlagEmbedding, flagembedding and flag_embedding
        # are one project, so one wheel, whichever a target names
        name = canonicalize_name(self.package)
        kept = self.wheel_dir / name / f"{name}-{self.ref}.whl"
        # a cache written before names were read so keeps the name as it was asked for
        asked = self.wheel_dir / self.package / f"{self.package}-{self.ref}.whl"
        return asked if not kept.is_file() and asked.is_file() else kept

    @property
    def keeps_release(self) -> bool:
        """Whether the wheel is kept once downloaded: every file of the release is then
        on disk, whichever were asked for first."""
        return self.wheel_dir is not None

    @property
    def available_offline(self) -> bool:
        """Files can be read without the network: the wheel is already kept."""
        return self.kept_wheel is not None and self.kept_wheel.is_file()

    def fetch(self, paths: Sequence[str]) -> dict[str, bytes | None]:
        kept = self.kept_wheel
        if kept is not None and kept.is_file():
            try:
                return KEPT_WHEELS.read(kept, paths, origin=self.description)
            except FetchError as exc:  # damaged on disk: forget it and download it again
                KEPT_WHEELS.forget(kept)
                self._folders = None
                with contextlib.suppress(OSError):
                    kept.unlink()
                if self.offline:
                    raise CacheDamaged(
                        f"--canary-offline: the cached wheel {kept} is damaged ({exc}) and was "
                        f"removed; run the same command without --canary-offline to download "
                        f"{self.package} {self.ref} again",
                        path=str(kept),
                        cause="damaged cache entries (offline: not refetched)",
                    ) from None
        if self.offline:
            raise OfflineMiss(
                f"--canary-offline: {self.description} is not in the cache; run the same "
                f"command without --canary-offline to download it",
                cause="not in the cache (offline)",
            )
        if kept is None:
            with tempfile.TemporaryDirectory(prefix="canary-wheel-") as folder:
                wheel = self._download(Path(folder))
                self.bytes_downloaded += wheel.stat().st_size
                return read_wheel_members(wheel, paths, origin=self.description)
        # Downloaded beside its final place so the rename is atomic: a run killed
        # mid-download leaves only a temporary folder, never a wheel a later run trusts.
        with writing(kept, where=self.wheel_dir):
            kept.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryDirectory(prefix=".download-", dir=kept.parent) as folder:
                wheel = self._download(Path(folder))
                self.bytes_downloaded += wheel.stat().st_size
                os.replace(wheel, kept)
        try:
            # Read where it is kept: its directory stays known for the files asked for next.
            return KEPT_WHEELS.read(kept, paths, origin=self.description)
        except FetchError:  # not a wheel at all: never kept
            KEPT_WHEELS.forget(kept)
            with contextlib.suppress(OSError):
                kept.unlink()
            raise

    def fingerprints(self, paths: Sequence[str]) -> dict[str, str]:
        """Each file's CRC-32 and size as the kept wheel's directory records them, read
        without reading the files; {} when no wheel is kept yet."""
        kept = self.kept_wheel
        if kept is None or not kept.is_file():
            return {}
        try:
            return KEPT_WHEELS.fingerprints(kept, paths, origin=self.description)
        except FetchError:
            return {}  # damaged: the next fetch replaces it, and the files are read then

    def listdir(self, folder: str) -> list[str] | None:
        """The entries of ``folder`` in the kept wheel; None when no wheel is kept yet (a
        lookup then falls back on what the package's own files say)."""
        kept = self.kept_wheel
        if self._folders is None:
            if kept is None or not kept.is_file():
                return None
            try:
                self._folders = KEPT_WHEELS.folders(kept, origin=self.description)
            except FetchError:
                return None  # damaged: the next fetch replaces it, the lookup is not the place
        found = self._folders.get(folder.rstrip("/"))
        return list(found) if found is not None else None

    @property
    def _listing(self) -> str:
        """This package's listing on the index, as HostHealth sees it: an index that lists
        nothing of the package is down for this package only."""
        return f"{INDEX} ({self.package})"

    def _download(self, folder: Path) -> Path:
        requirement = f"{self.package}=={self.ref}"
        if (why := pin.problem(self.package, self.ref)) is not None:
            raise RefNotFound(
                f"{requirement!r} was not asked of pip: {why}",
                cause="not a package name and one exact version",
            )
        for host in (INDEX, self._listing):
            if (cause := self.health.down_cause(host)) is not None:
                raise IndexUnreachable(
                    f"{cause}: {requirement} not tried, after {DOWN_AFTER} downloads in a "
                    f"row failed the same way",
                    cause=cause,
                )
        args = [
            "download",
            "--no-deps",
            "--only-binary=:all:",
            "--no-input",
            "--disable-pip-version-check",
            "--quiet",
            *self._python_args(),
            "--dest",
            str(folder),
            "--",  # whatever the requirement says, pip reads it as one, never as an option
            requirement,
        ]
        try:
            done = run_pip(self.pip, args, timeout=self.timeout)
        except OSError:  # missing or not executable
            raise FetchError(
                f"cannot run {self.pip[0]!r} to download {requirement}: is pip installed? "
                f"(canary fetches released versions with `pip download`)",
                cause=f"cannot run {self.pip[0]!r}",
            ) from None
        except subprocess.TimeoutExpired:
            raise FetchError(
                f"`pip download {requirement}` did not finish within {self.timeout:.0f} s",
                cause=f"`pip download` did not finish within {self.timeout:.0f} s",
            ) from None
        if done.returncode == 0:
            self.health.answered(INDEX)
            self.health.answered(self._listing)
        else:
            self._raise_failure(requirement, done)
        wheels = sorted(folder.glob("*.whl"))
        if len(wheels) != 1:
            found = ", ".join(p.name for p in folder.iterdir()) or "nothing"
            raise FetchError(f"`pip download {requirement}` left {found} instead of one wheel")
        return wheels[0]

    def _python_args(self) -> list[str]:
        return ["--ignore-requires-python"] if self.ignore_requires_python else []

    def _raise_failure(self, requirement: str, done: subprocess.CompletedProcess[str]) -> None:
        output = f"{done.stdout}\n{done.stderr}"
        tail = _tail(done.stderr or done.stdout)
        if "No module named pip" in output:
            raise FetchError(
                f"pip is not installed for {self.pip[0]}; install it "
                f"(python -m ensurepip) so canary can download {requirement}",
                cause=f"pip is not installed for {self.pip[0]}",
            )
        failure = pipfailure.classify(output)
        if failure.kind == pipfailure.NO_SPACE:
            where = self.wheel_dir if self.wheel_dir is not None else "the temporary folder"
            raise FetchError(
                f"no space left on the device of {where} while pip downloaded {requirement}; "
                f"free some space or set CANARY_CACHE_DIR to a larger disk",
                cause=f"no space left on the device of {where}",
            )
        if failure.kind == pipfailure.UNREACHABLE:
            cause = f"cannot reach the package index (pip: {failure.reason})"
            self.health.no_answer(INDEX, cause, DOWN_AFTER)
            raise IndexUnreachable(
                f"{cause} while downloading {requirement}; check the network and your pip "
                f"configuration (`pip config list`). pip said: {failure.evidence}",
                cause=cause,
            )
        if failure.kind == pipfailure.NO_RELEASES:
            cause = f"the package index lists no wheel of {self.package} at all"
            self.health.no_answer(self._listing, cause, DOWN_AFTER)
            raise FetchError(
                f"{cause} (pip: from versions: none) for {requirement}: if it publishes only "
                f"source distributions, {_SDIST_ONLY} Otherwise, is your pip configuration "
                f"pointing at the index you meant (`pip config list`)? pip said: {tail}",
                cause=cause,
            )
        if failure.kind == pipfailure.CONSTRAINED:
            raise FetchError(
                f"pip will not download {requirement}: {failure.reason}, from a constraints "
                f"file in your pip configuration (`pip config list`, or PIP_CONSTRAINT). "
                f"canary only reads the wheel: download it without the constraint and pass "
                f"its unpacked folder as the target. pip said: {failure.evidence}",
                cause=f"{failure.reason} (a pip constraint)",
            )
        if failure.kind == pipfailure.NOT_FOUND:
            raise RefNotFound(
                f"{requirement} has no wheel on the package index: is the version right? "
                f"If that release is only a source distribution: {_SDIST_ONLY} "
                f"(pip said: {tail})",
                cause=f"no wheel of that version of {self.package} on the package index",
            )
        raise FetchError(
            f"`pip download {requirement}` failed (exit {done.returncode}): {tail}",
            cause=f"`pip download` failed (exit {done.returncode})",
        )


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


class OpenWheels:
    """The kept wheels read last, their directories held (:class:`~canary.sources.
    wheelfile.WheelDirectory`, no file held open): a reader that asks for one file at a
    time (the surface's lookups, thousands per release) reads a wheel's directory once
    instead of once per file (30 ms for transformers), and a run over every release
    (each wheel read a few times, minutes apart) once per wheel. The least recently
    read is forgotten first."""

    def __init__(self, limit: int = 256) -> None:
        self.limit = limit
        self._open: dict[tuple[str, int, int], WheelDirectory] = {}
        self._folders: dict[tuple[str, int, int], dict[str, list[str]]] = {}
        self._lock = threading.Lock()

    def read(self, wheel: Path, paths: Sequence[str], *, origin: str) -> dict[str, bytes | None]:
        """As :func:`read_wheel_members`, through the wheel's directory."""
        with self._guard(wheel, origin):
            directory = self._opened(wheel)
        with self._guard(wheel, origin):
            return directory.read(paths)  # outside the lock: threads read their wheels at once

    def fingerprints(self, wheel: Path, paths: Sequence[str], *, origin: str) -> dict[str, str]:
        """``CRC-32:size`` of each of ``paths`` the wheel holds, off its directory."""
        with self._guard(wheel, origin):
            members = self._opened(wheel).members
        return {p: members[p].fingerprint for p in paths if p in members}

    def names(self, wheel: Path, *, origin: str) -> frozenset[str]:
        """Every path in the wheel."""
        with self._guard(wheel, origin):
            return self._opened(wheel).names

    def folders(self, wheel: Path, *, origin: str) -> Mapping[str, list[str]]:
        """Every folder of the wheel -> its entries (:func:`canary.sources.folder_index`),
        built once per wheel: a walk over ``models/`` lists hundreds of folders."""
        with self._guard(wheel, origin):
            key = self._key(wheel)
            names = self._opened(wheel).names
        with self._lock:
            if key not in self._folders:
                self._folders[key] = folder_index(names)
            return self._folders[key]

    def forget(self, wheel: Path) -> None:
        with self._lock:
            self._close(str(wheel))

    @contextlib.contextmanager
    def _guard(self, wheel: Path, origin: str) -> Iterator[None]:
        """A wheel that does not read as one is forgotten and raised as the source's
        FetchError; the lock is held only where the directories change."""
        try:
            yield
        except (zipfile.BadZipFile, OSError) as exc:
            self.forget(wheel)
            raise FetchError(f"{origin}: {wheel.name} is not a readable wheel: {exc}") from None

    @staticmethod
    def _key(wheel: Path) -> tuple[str, int, int]:
        stat = wheel.stat()
        return (str(wheel), stat.st_mtime_ns, stat.st_size)  # a wheel downloaded again

    def _opened(self, wheel: Path) -> WheelDirectory:
        with self._lock:
            key = self._key(wheel)
            if key in self._open:
                self._open[key] = self._open.pop(key)  # read last: forgotten last
                return self._open[key]
            self._close(str(wheel))
            while len(self._open) >= self.limit:
                self._close(next(iter(self._open))[0])
        directory = WheelDirectory(wheel)  # outside the lock: 30 ms for transformers
        with self._lock:
            return self._open.setdefault(key, directory)

    def _close(self, wheel: str) -> None:
        for key in [key for key in self._open if key[0] == wheel]:
            del self._open[key]
            self._folders.pop(key, None)


# One per process: every source of the process reads kept wheels through it.
KEPT_WHEELS = OpenWheels()


def _tail(text: str, limit: int = 600) -> str:
    lines = [line for line in text.strip().splitlines() if not line.startswith("WARNING: Location")]
    return " | ".join(lines)[-limit:]
