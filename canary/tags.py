"""tags.toml: which releases of which package the canary checks.

Per package: the GitHub repository and its source layout, a floor, the resolved list of
every stable release at or above the floor (rewritten by ``python -m canary tags
--update``), anchors (the releases CI always runs) and known-broken releases with a
reason. ``[runtime.*]`` holds the runtime tier's pin sets and is validated there.

Loading is strict: an unknown key, a bad version or an impossible floor stops the run
with the file, the key and what is wrong.
"""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from packaging.version import InvalidVersion, Version

from canary.atomic import write_atomically
from canary.errors import ConfigError, InfrastructureError
from canary.versions import listed_for

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

MAIN = "main"

_PACKAGE_KEYS = {"repo", "package_dir", "floor", "versions", "anchors", "broken"}
_REQUIRED_KEYS = {"repo", "floor", "versions"}
_TOP_LEVEL_KEYS = {"packages", "runtime"}
# The whole array, strings and comments included: a "]" inside a comment does not end it.
_VERSIONS_ARRAY = re.compile(r'^versions\s*=\s*\[(?:"[^"]*"|#[^\n]*|[^\]"#])*\]', re.MULTILINE)


# The release lists this canary was built with: the repository's tags.toml, carried inside
# the package (canary/tags.toml links to it; the wheel holds its content).
SHIPPED_TAGS = Path(__file__).with_name("tags.toml")


@dataclass(frozen=True)
class PackageTags:
    """What tags.toml says about one upstream package."""

    name: str
    repo: str
    package_dir: str
    floor: Version
    versions: tuple[str, ...]
    anchors: tuple[str, ...] = ()
    broken: Mapping[str, str] = field(default_factory=dict)

    def broken_reason(self, label: str, version: Version | None = None) -> str | None:
        """Why the release ``label`` is listed as broken; a pre-release of a broken
        release (``version``, where the label alone does not say it) shares the entry."""
        reason, _ = listed_for(self.broken, label, version)
        return reason or None


@dataclass(frozen=True)
class Tags:
    path: Path
    packages: Mapping[str, PackageTags]
    runtime: Mapping[str, object] = field(default_factory=dict)

    def package(self, name: str) -> PackageTags:
        try:
            return self.packages[name]
        except KeyError:
            known = ", ".join(sorted(self.packages))
            raise ConfigError(
                f"{self.path}: unknown package {name!r}; tags.toml lists: {known}"
            ) from None


def load_tags(path: Path | str, *, option: str = "--canary-tags-file") -> Tags:
    """Read and validate tags.toml; :class:`ConfigError` names the file, key and problem.

    ``option`` is how the caller's user names another file (``--tags-file`` under
    ``python -m canary``), so a missing file's advice fits the command that was run.
    """
    path = Path(path)
    return parse_tags(read_toml(path, hint=f"pass {option} PATH"), path)


def read_toml(path: Path, *, hint: str) -> dict[str, object]:
    """The parsed file; a missing or malformed one is a ConfigError that says what to do."""
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConfigError(
            f"{path}: file not found; {hint} or run from the repository root"
        ) from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from None


def parse_tags(data: Mapping[str, object], path: Path) -> Tags:
    unknown = set(data) - _TOP_LEVEL_KEYS
    if unknown:
        raise ConfigError(
            f"{path}: unknown top-level key(s) {sorted(unknown)}; "
            f"expected {sorted(_TOP_LEVEL_KEYS)}"
        )
    packages_table = data.get("packages")
    if not isinstance(packages_table, dict) or not packages_table:
        raise ConfigError(f"{path}: [packages.<name>] tables are missing")
    packages = {name: _parse_package(name, table, path) for name, table in packages_table.items()}
    runtime = data.get("runtime", {})
    if not isinstance(runtime, dict):
        raise ConfigError(f"{path}: [runtime] must be a table of pin sets")
    return Tags(path=path, packages=packages, runtime=runtime)


def _parse_package(name: str, table: object, path: Path) -> PackageTags:
    where = f"{path}: [packages.{name}]"
    if not isinstance(table, dict):
        raise ConfigError(f"{where} must be a table")
    unknown = set(table) - _PACKAGE_KEYS
    if unknown:
        raise ConfigError(
            f"{where}: unknown key(s) {sorted(unknown)}; expected some of {sorted(_PACKAGE_KEYS)}"
        )
    missing = _REQUIRED_KEYS - set(table)
    if missing:
        raise ConfigError(f"{where}: missing key(s) {sorted(missing)}")

    repo = _string(table, "repo", where)
    if not re.fullmatch(r"[\w.-]+/[\w.-]+", repo):
        raise ConfigError(f"{where}: repo = {repo!r} is not 'owner/name'")
    package_dir = _string(table, "package_dir", where, default="")
    floor = _version(_string(table, "floor", where), f"{where}: floor")

    versions = _version_list(table, "versions", where)
    if not versions:
        raise ConfigError(
            f"{where}: versions is empty; run `python -m canary tags --update` to resolve it"
        )
    if max(Version(v) for v in versions) < floor:
        raise ConfigError(
            f"{where}: floor {floor} is above every listed release (newest: "
            f"{max(versions, key=Version)}); lower the floor or run "
            f"`python -m canary tags --update`"
        )
    for version in versions:
        parsed = Version(version)
        if parsed.is_prerelease or parsed.is_devrelease:
            raise ConfigError(f"{where}: versions lists {version!r}, which is not a stable release")
        if parsed < floor:
            raise ConfigError(f"{where}: versions lists {version!r}, below floor {floor}")

    anchors = _version_list(table, "anchors", where)
    _must_be_listed(anchors, versions, f"{where}: anchors")

    broken_table = table.get("broken", {})
    if not isinstance(broken_table, dict):
        raise ConfigError(f'{where}: broken must be a table of version = "reason"')
    broken: dict[str, str] = {}
    for version, reason in broken_table.items():
        _version(version, f"{where}: broken")
        if not isinstance(reason, str) or not reason.strip():
            raise ConfigError(f"{where}: broken.{version!r} needs a reason string")
        broken[version] = reason
    _must_be_listed(list(broken), versions, f"{where}: broken")

    return PackageTags(
        name=name,
        repo=repo,
        package_dir=package_dir,
        floor=floor,
        versions=tuple(versions),
        anchors=tuple(anchors),
        broken=broken,
    )


def _string(table: Mapping[str, object], key: str, where: str, default: str | None = None) -> str:
    value = table.get(key, default)
    if not isinstance(value, str):
        raise ConfigError(f"{where}: {key} must be a string, got {value!r}")
    return value


def _version(text: str, where: str) -> Version:
    try:
        return Version(text)
    except InvalidVersion:
        raise ConfigError(f"{where}: {text!r} is not a version (expected e.g. '4.57.6')") from None


def _version_list(table: Mapping[str, object], key: str, where: str) -> list[str]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{where}: {key} must be a list of version strings")
    seen: set[Version] = set()
    for text in value:
        parsed = _version(text, f"{where}: {key}")
        if str(parsed) != text:
            raise ConfigError(f"{where}: {key} lists {text!r}; write it as {str(parsed)!r}")
        if parsed in seen:
            raise ConfigError(f"{where}: {key} lists {text!r} twice")
        if key == "versions" and seen and parsed < max(seen):
            # Oldest first is what `tags --update` writes and what reports rely on.
            raise ConfigError(
                f"{where}: versions must be sorted oldest first, but {text!r} comes after "
                f"{str(max(seen))!r}; run `python -m canary tags --update` to rewrite the list"
            )
        seen.add(parsed)
    return list(value)


def _must_be_listed(subset: Iterable[str], versions: list[str], where: str) -> None:
    listed = set(versions)
    for version in subset:
        if version not in listed:
            raise ConfigError(f"{where}: {version!r} is not in versions")


# -- resolving releases from the package index ------------------------------------------


def stable_releases(package: str, floor: Version) -> list[str]:
    """Every stable release of ``package`` at or above ``floor``, oldest first.

    Asks ``pip index versions`` so the user's pip configuration (index, mirrors,
    proxies) decides where the answer comes from.
    """
    command = [sys.executable, "-m", "pip", "index", "versions", package]
    try:
        done = subprocess.run(command, capture_output=True, text=True, check=False, timeout=300)
    except FileNotFoundError as exc:
        raise InfrastructureError(f"cannot run pip to list {package} releases: {exc}") from None
    except subprocess.TimeoutExpired:
        raise InfrastructureError(f"`{' '.join(command)}` did not answer within 300 s") from None
    if done.returncode != 0:
        raise InfrastructureError(
            f"`{' '.join(command)}` failed (exit {done.returncode}): {done.stderr.strip()[-500:]}"
        )
    match = re.search(r"^Available versions:\s*(.+)$", done.stdout, re.MULTILINE)
    if not match:
        raise InfrastructureError(f"`{' '.join(command)}` printed no 'Available versions:' line")
    releases = []
    for text in match.group(1).split(","):
        try:
            version = Version(text.strip())
        except InvalidVersion:
            continue  # legacy, non-PEP 440 releases predate every floor
        if not (version.is_prerelease or version.is_devrelease) and version >= floor:
            releases.append(str(version))
    if not releases:
        raise ConfigError(f"{package}: no stable release at or above floor {floor} on the index")
    return sorted(releases, key=Version)


def rewrite_versions(text: str, resolved: Mapping[str, list[str]]) -> str:
    """Replace each ``[packages.NAME]`` table's ``versions = [...]`` array, keeping the rest.

    Comments, key order and hand-written fields survive because only the array's own
    text is replaced.
    """
    for name, versions in resolved.items():
        table = re.search(rf"^\[packages\.{re.escape(name)}\]\s*$", text, re.MULTILINE)
        if not table:
            raise ConfigError(f"tags.toml has no [packages.{name}] table to update")
        next_table = re.compile(r"^\[", re.MULTILINE).search(text, table.end())
        end = next_table.start() if next_table else len(text)
        array = _VERSIONS_ARRAY.search(text, table.end(), end)
        if not array:
            raise ConfigError(f"tags.toml: [packages.{name}] has no versions = [...] to update")
        text = text[: array.start()] + format_versions(versions) + text[array.end() :]
    return text


def format_versions(versions: list[str], per_line: int = 8) -> str:
    rows = [versions[i : i + per_line] for i in range(0, len(versions), per_line)]
    body = "".join("    " + ", ".join(f'"{v}"' for v in row) + ",\n" for row in rows)
    return "versions = [\n" + body + "]"


def update_tags_file(
    path: Path, *, option: str = "--canary-tags-file"
) -> dict[str, tuple[list[str], list[str]]]:
    """Resolve every package's releases from the index and rewrite ``path`` in place.

    Returns, per package, the versions added and removed.
    """
    tags = load_tags(path, option=option)
    resolved = {name: stable_releases(name, pkg.floor) for name, pkg in tags.packages.items()}
    text = path.read_text(encoding="utf-8")
    new_text = rewrite_versions(text, resolved)
    try:  # never write a file we would refuse to load
        parse_tags(tomllib.loads(new_text), path)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: the updated versions would not be valid TOML: {exc}") from None
    write_atomically(path, new_text)
    return {
        name: (
            [v for v in resolved[name] if v not in pkg.versions],
            [v for v in pkg.versions if v not in resolved[name]],
        )
        for name, pkg in tags.packages.items()
    }
