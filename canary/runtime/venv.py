"""One venv per pin set under ``<cache>/runtime-venvs``: its identity, build and reuse.

A venv lives at ``<name>-<digest>``, where the digest covers the pins, the interpreter
and canary's own ``[project]`` table, so a venv is reused exactly while all three hold.
A build happens in a temporary sibling folder that is renamed into place only once it is
complete (its marker file is written last), so an interrupted build is never mistaken
for a usable one.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import sys
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from packaging.specifiers import SpecifierSet

from canary.errors import ConfigError, InfrastructureError
from canary.runtime.installer import Installer
from canary.runtime.pins import PinSet
from canary.runtime.process import Command, RunFn, run_step, tail

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

# Bump when the layout or the contents of a built venv change, so old ones are rebuilt.
VENV_FORMAT = 1
MARKER = "canary-venv.json"
# A build folder untouched this long is from a killed run, not a concurrent one.
STALE_BUILD_SECONDS = 6 * 3600


@dataclass(frozen=True)
class Python:
    """The interpreter venvs are built from; part of their identity."""

    executable: str
    version: str  # sys.version: includes the build, so a rebuilt interpreter is a new venv

    @classmethod
    def current(cls) -> Python:
        return cls(executable=sys.executable, version=sys.version)

    @property
    def short_version(self) -> str:
        return self.version.split()[0]


def venv_python(venv: Path) -> Path:
    """The interpreter of the venv at ``venv``."""
    if os.name == "nt":  # pragma: no cover - no Windows runner here
        return venv / "Scripts" / "python.exe"
    return venv / "bin" / "python"


def venv_digest(pin_set: PinSet, python: Python, project: Mapping[str, object]) -> str:
    """What makes two venvs interchangeable: the pins, the interpreter, canary's metadata."""
    identity = {
        "format": VENV_FORMAT,
        "pins": dict(pin_set.pins),
        "python": [python.executable, python.version],
        # canary is installed editable, so its code is live; its dependencies and entry
        # points are fixed at install time and come from here.
        "project": project,
    }
    blob = json.dumps(identity, sort_keys=True, default=str).encode()
    return hashlib.sha256(blob).hexdigest()[:12]


def venv_dir(root: Path, pin_set: PinSet, digest: str) -> Path:
    return root / f"{pin_set.name}-{digest}"


def read_project_table(repo: Path) -> dict[str, object]:
    """The ``[project]`` table of the checkout at ``repo``: part of a venv's identity."""
    try:
        data = tomllib.loads((repo / "pyproject.toml").read_text(encoding="utf-8"))
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ConfigError(f"{repo / 'pyproject.toml'}: cannot read it: {exc}") from None
    return dict(data.get("project", {}))


def is_complete(venv: Path) -> bool:
    """Whether ``venv`` is a finished build (it has its marker and its interpreter)."""
    return _read_marker(venv) is not None


@dataclass(frozen=True)
class Built:
    path: Path
    reused: bool
    seconds: float
    installed: Mapping[str, str | None]


_PROBE = (
    "import json, sys\n"
    "from importlib.metadata import PackageNotFoundError, version\n"
    "found = {}\n"
    "for name in sys.argv[1:]:\n"
    "    try:\n"
    "        found[name] = version(name)\n"
    "    except PackageNotFoundError:\n"
    "        found[name] = None\n"
    "print(json.dumps(found))\n"
)


def ensure_venv(
    pin_set: PinSet,
    *,
    root: Path,
    digest: str,
    repo: Path,
    python: Python,
    installer: Installer,
    run: RunFn,
    environ: Mapping[str, str],
    rebuild: bool = False,
    clock: Callable[[], float] = time.monotonic,
) -> Built:
    """Reuse the complete venv for this digest, or build it; raises InfrastructureError."""
    final = venv_dir(root, pin_set, digest)
    start = clock()
    if not rebuild and (marker := _read_marker(final)) is not None:
        return Built(final, reused=True, seconds=clock() - start, installed=marker["installed"])
    root.mkdir(parents=True, exist_ok=True)
    building = root / f".build-{final.name}-{uuid.uuid4().hex[:8]}"
    env = {**environ, **installer.index.env}
    try:
        create = installer.create(building, python.executable)
        run_step(run, _with(create, env, root), "create venv")
        install = installer.install(venv_python(building), pin_set.requirements(), repo)
        run_step(run, _with(install, env, root), f"install ({installer.name})")
        installed = _probe(run, building, pin_set, env)
        marker_data = {
            "name": pin_set.name,
            "pins": dict(pin_set.pins),
            "installed": installed,
            "python": python.version,
            "installer": installer.name,
        }
        # Written last: only a venv that has its marker counts as complete.
        (building / MARKER).write_text(json.dumps(marker_data, indent=2), encoding="utf-8")
        _move_into_place(building, final, replace=rebuild)
    finally:
        shutil.rmtree(building, ignore_errors=True)
    _drop_other_digests(root, pin_set.name, keep=final)
    return Built(final, reused=False, seconds=clock() - start, installed=installed)


def _with(command: Command, env: Mapping[str, str], cwd: Path) -> Command:
    # cwd outside the checkout: uv must not pick up a project or its settings from there.
    return Command(command.argv, cwd=cwd, env=env, timeout=command.timeout)


def _probe(
    run: RunFn, venv: Path, pin_set: PinSet, env: Mapping[str, str]
) -> dict[str, str | None]:
    names = list(pin_set.pins)
    command = Command((str(venv_python(venv)), "-c", _PROBE, *names), env=env, timeout=120)
    result = run_step(run, command, "read installed versions")
    try:
        installed = json.loads(result.output.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        raise InfrastructureError(
            f"cannot read installed versions:\n{tail(result.output)}"
        ) from None
    # A resolver that silently picked something else would make the set mean nothing.
    wrong = [
        f"{name}: pinned {pin}, installed {installed.get(name)}"
        for name, pin in pin_set.pins.items()
        if installed.get(name) is None or not SpecifierSet(f"=={pin}").contains(installed[name])
    ]
    if wrong:
        raise InfrastructureError("installed versions differ from the pins: " + "; ".join(wrong))
    return installed


def _read_marker(venv: Path) -> dict | None:
    try:
        data = json.loads((venv / MARKER).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    if not venv_python(venv).exists() or not isinstance(data.get("installed"), dict):
        return None
    return data


def _move_into_place(building: Path, final: Path, *, replace: bool) -> None:
    if final.exists():
        if not replace and _read_marker(final) is not None:
            # A concurrent runner finished the same venv first and may be using it: keep it.
            return
        # --rebuild, or a folder without marker (never one of ours: ours appear complete).
        retired = final.with_name(f".retired-{final.name}-{uuid.uuid4().hex[:8]}")
        os.replace(final, retired)
        shutil.rmtree(retired, ignore_errors=True)
    os.replace(building, final)


def _drop_other_digests(root: Path, name: str, keep: Path) -> None:
    """Free the disk: venvs of earlier pins of this set are never reused again, and build
    folders of killed runs are never finished. Recent ones may belong to a concurrent run."""
    digest = re.compile(rf"^{re.escape(name)}-[0-9a-f]{{12}}$")
    leftover = re.compile(rf"^\.(build|retired)-{re.escape(name)}-[0-9a-f]{{12}}-[0-9a-f]{{8}}$")
    for path in root.iterdir():
        if path == keep or not path.is_dir():
            continue
        if digest.match(path.name) or (
            leftover.match(path.name) and time.time() - path.stat().st_mtime > STALE_BUILD_SECONDS
        ):
            shutil.rmtree(path, ignore_errors=True)
