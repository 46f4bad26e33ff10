"""A tree on disk, checked as a package: ``--canary-local PKG=PATH``.

PATH may be a repository checkout (``src/<pkg>/`` or ``<pkg>/`` at its root), an unpacked
wheel or a site-packages folder, or the package folder itself.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from canary.errors import ConfigError, FetchError
from canary.sources import version as versions


class LocalSource:
    """Files of one package read from a folder that holds ``<package>/``."""

    kind = "local"
    bytes_downloaded = 0  # read in place: nothing crosses the network

    def __init__(self, package: str, root: Path, *, version: str | None = None) -> None:
        self.package = package
        self.root = root
        self.ref = version or detect_version(package, root) or ""
        if not self.ref:
            raise ConfigError(
                f"--canary-local {package}={root}: cannot tell the version of this tree "
                f"(no literal __version__, {package}/VERSION, *.dist-info/METADATA, "
                f"pyproject.toml, setup.py or setup.cfg version, nor a file they point at); "
                f"state it: --canary-local {package}@VERSION={root}"
            )

    @classmethod
    def from_path(
        cls, package: str, path: Path | str, *, version: str | None = None
    ) -> LocalSource:
        return cls(package, find_package_root(package, Path(path)), version=version)

    @property
    def description(self) -> str:
        return f"{self.package} {self.ref} from {self.root / self.package}"

    def fetch(self, paths: Sequence[str]) -> dict[str, bytes | None]:
        found: dict[str, bytes | None] = {}
        for path in paths:
            try:
                found[path] = _read(self.root, path)
            except OSError as exc:
                raise FetchError(f"{self.description}: cannot read {path}: {exc}") from None
        return found

    def listdir(self, folder: str) -> list[str] | None:
        """The entries of ``folder`` in the tree, None where there is no such folder."""
        try:
            return sorted(entry.name for entry in (self.root / folder).iterdir()) or None
        except OSError:
            return None


def _repository_root(root: Path) -> Path:
    """Where the packaging files are: above ``src/`` in a src layout, else the root itself."""
    return root.parent if root.name == "src" else root


def _read(root: Path, path: str) -> bytes | None:
    """A file of the tree at ``root`` by source path (installed layout, or ``repo:...``)."""
    relative = versions.repo_relative(path)
    file = _repository_root(root) / relative if relative is not None else root / path
    return file.read_bytes() if file.is_file() else None


def find_package_root(package: str, path: Path) -> Path:
    """The folder holding ``<package>/__init__.py`` for a tree given in any of its layouts."""
    given = f"--canary-local {package}={path}"
    if not path.exists():
        raise ConfigError(f"{given}: {path} does not exist")
    if not path.is_dir():
        raise ConfigError(f"{given}: {path} is not a folder")
    candidates = [path, path / "src", path.parent] if path.name == package else [path, path / "src"]
    for root in candidates:
        if (root / package / "__init__.py").is_file():
            return root
    raise ConfigError(
        f"{given}: this is not a {package} tree: no {package}/__init__.py in it or under src/; "
        f"point it at a repository checkout, an unpacked wheel or a site-packages folder"
    )


def detect_version(package: str, root: Path) -> str | None:
    def read(path: str) -> bytes | None:
        return _read(root, path)

    if version := versions.version_from_package_files(package, read):
        return version
    normalized = re.sub(r"[-_.]+", "_", package).lower()
    for metadata in sorted(root.glob("*.dist-info/METADATA")):
        name = metadata.parent.name.removesuffix(".dist-info").rsplit("-", 1)[0]
        if re.sub(r"[-_.]+", "_", name).lower() != normalized:
            continue
        if version := versions.version_from_metadata(metadata.read_text("utf-8", "replace")):
            return version
    return versions.version_from_repository(read)
