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
                f"pyproject.toml, setup.py or setup.cfg version); "
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
            file = self.root / path
            try:
                found[path] = file.read_bytes() if file.is_file() else None
            except OSError as exc:
                raise FetchError(f"{self.description}: cannot read {path}: {exc}") from None
        return found


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
    def read(relative: str) -> bytes | None:
        file = root / relative
        return file.read_bytes() if file.is_file() else None

    if version := versions.version_from_package_files(package, read):
        return version
    normalized = re.sub(r"[-_.]+", "_", package).lower()
    for metadata in sorted(root.glob("*.dist-info/METADATA")):
        name = metadata.parent.name.removesuffix(".dist-info").rsplit("-", 1)[0]
        if re.sub(r"[-_.]+", "_", name).lower() != normalized:
            continue
        if version := versions.version_from_metadata(metadata.read_text("utf-8", "replace")):
            return version
    repo = root.parent if root.name == "src" else root
    readers = (
        ("pyproject.toml", versions.version_from_pyproject),
        ("setup.py", versions.version_from_setup_py),
        ("setup.cfg", versions.version_from_setup_cfg),
    )
    for name, reader in readers:
        file = repo / name
        if file.is_file() and (version := reader(file.read_text("utf-8", "replace"))):
            return version
    return None
