"""A per-release overlay on a base venv: the swept release (and swapped companions) in a
folder put first on ``PYTHONPATH``, so one venv with torch serves every release near it.

The overlay holds only what differs from the base: the environment's stack is resolved
(``uv pip compile``) preferring every version the base has installed, and whatever the
resolution changes (the release, a swapped companion, a tokenizers the release needs) is
installed into the folder without dependencies. A companion the environment leaves out is
hidden by a package that raises ModuleNotFoundError saying why, so its tests skip with the reason.
Overlays live inside the base venv's folder: rebuilding or dropping the base drops them.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from canary.errors import InfrastructureError
from canary.runtime.installer import Installer
from canary.runtime.process import Command, RunFn, run_step, tail
from canary.runtime.sweepenv import Environment
from canary.runtime.venv import venv_python

OVERLAY_FORMAT = 2  # 2: the hiding package raises ModuleNotFoundError
MARKER = "canary-overlay.json"

_INSTALLED = (
    "import json\n"
    "from importlib.metadata import distributions\n"
    "print(json.dumps({d.metadata['Name']: d.version for d in distributions()}))\n"
)


@dataclass(frozen=True)
class Overlay:
    path: Path
    reused: bool
    seconds: float
    packages: Mapping[str, str]  # what the overlay installs over the base
    bytes: int


def overlay_dir(base: Path, env: Environment) -> Path:
    spec = json.dumps([OVERLAY_FORMAT, env.overlay, sorted(env.left_out)], sort_keys=True)
    digest = hashlib.sha256(spec.encode()).hexdigest()[:10]
    return base / "overlays" / f"{env.package}-{env.release}-{digest}"


def ensure_overlay(
    env: Environment,
    base: Path,
    *,
    installer: Installer,
    run: RunFn,
    environ: Mapping[str, str],
    clock: Callable[[], float] = time.monotonic,
) -> Overlay:
    """Reuse or build the overlay of ``env`` on the base venv at ``base``."""
    final = overlay_dir(base, env)
    start = clock()
    if (marker := _read_marker(final)) is not None:
        return Overlay(final, True, clock() - start, marker["packages"], folder_bytes(final))
    if installer.uv is None:
        raise InfrastructureError("the sweep's overlays need uv: pip install -e '.[runtime]'")
    building = final.with_name(f".build-{final.name}-{uuid.uuid4().hex[:8]}")
    building.mkdir(parents=True)
    env_vars = {**environ, **installer.index.env}
    python = venv_python(base)
    try:
        installed = _installed(run, python, env_vars)
        packages = _resolve(env, installed, building, installer, python, run, env_vars)
        if packages:
            argv = (
                installer.uv, "pip", "install", "--python", str(python), "--quiet",
                "--target", str(building), "--no-deps", "--compile-bytecode",
                *installer.index.args, *(f"{n}=={v}" for n, v in packages.items()),
            )  # fmt: skip
            run_step(run, Command(argv, cwd=base, env=env_vars, timeout=1800), "overlay install")
        for name, why in env.left_out.items():
            _hide(building, name, f"{name} is left out of this sweep environment: {why}")
        marker_data = {"environment": env.line(), "packages": packages}
        (building / MARKER).write_text(json.dumps(marker_data, indent=2), encoding="utf-8")
        if final.exists():
            shutil.rmtree(final)  # no marker: a folder never finished
        os.replace(building, final)
    finally:
        shutil.rmtree(building, ignore_errors=True)
    return Overlay(final, False, clock() - start, packages, folder_bytes(final))


def _installed(run: RunFn, python: Path, env: Mapping[str, str]) -> dict[str, str]:
    result = run_step(run, Command((str(python), "-c", _INSTALLED), env=env, timeout=120),
                      "read the base venv's distributions")  # fmt: skip
    try:
        found = json.loads(result.output.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        message = f"cannot read the base venv's distributions:\n{tail(result.output)}"
        raise InfrastructureError(message) from None
    return {canonicalize_name(name): version for name, version in found.items()}


def _resolve(  # noqa: PLR0917 - one call site, every argument a different kind
    env: Environment,
    installed: Mapping[str, str],
    work: Path,
    installer: Installer,
    python: Path,
    run: RunFn,
    environ: Mapping[str, str],
) -> dict[str, str]:
    """What to install over the base: the stack resolved, preferring the base's versions
    (as constraints; without them where they cannot all hold), minus what the base has."""
    requirements = work / "requirements.in"
    requirements.write_text("".join(f"{n}=={v}\n" for n, v in env.pins.items()), "utf-8")
    constraints = work / "constraints.txt"
    keep = {n: v for n, v in installed.items() if n not in env.pins and n not in env.left_out}
    constraints.write_text("".join(f"{n}=={v}\n" for n, v in sorted(keep.items())), "utf-8")
    base_argv = (
        installer.uv, "pip", "compile", str(requirements), "--python", str(python),
        "--no-header", "--no-annotate", "--quiet", *installer.index.args,
    )  # fmt: skip
    result = run(Command((*base_argv, "-c", str(constraints)), cwd=work, env=environ, timeout=600))
    if result.returncode != 0:  # the release needs something the base cannot give
        result = run_step(run, Command(base_argv, cwd=work, env=environ, timeout=600), "resolve")
    overlay = {}
    for line in result.output.splitlines():
        name, sep, version = line.strip().partition("==")
        if not sep or line.startswith((" ", "#")):
            continue
        name = canonicalize_name(name)
        version = version.split(";")[0].strip()
        pinned_elsewhere = name in env.pins and name not in env.overlay
        if pinned_elsewhere or _same(installed.get(name), version):
            continue
        overlay[name] = version
    missing = set(env.overlay) - set(overlay)
    if missing - set(installed):
        raise InfrastructureError(f"the resolution lacks {sorted(missing)}:\n{tail(result.output)}")
    return dict(sorted(overlay.items()))


def _same(installed: str | None, version: str) -> bool:
    if installed is None:
        return False
    try:
        return Version(installed) == Version(version)
    except InvalidVersion:
        return installed == version


def _hide(folder: Path, name: str, message: str) -> None:
    package = folder / name.replace("-", "_")
    package.mkdir()
    # ModuleNotFoundError: pytest.importorskip skips on it (another ImportError is an error).
    text = f"raise ModuleNotFoundError({message!r}, name={name!r})\n"
    (package / "__init__.py").write_text(text, encoding="utf-8")


def _read_marker(folder: Path) -> dict | None:
    try:
        data = json.loads((folder / MARKER).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    return data if isinstance(data.get("packages"), dict) else None


def folder_bytes(folder: Path) -> int:
    """Bytes the files under ``folder`` take, each inode counted once."""
    seen: set[tuple[int, int]] = set()
    total = 0
    for root, _, files in os.walk(folder):
        for name in files:
            try:
                st = os.lstat(os.path.join(root, name))
            except OSError:
                continue
            if (st.st_dev, st.st_ino) not in seen:
                seen.add((st.st_dev, st.st_ino))
                total += st.st_blocks * 512
    return total
