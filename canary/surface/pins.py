"""The requirements of the dependencies a project pins to one release, as the package index
states them: what such a pin requires of upstream, every install of the project has.

rapid-mlx allows ``transformers>=5.0.0,<5.16`` and pins ``mlx-vlm==0.7.2``, which requires
``transformers>=5.14.0``: pip installs no transformers 5.0-5.13 beside it, so no miss there is
anyone's problem (:mod:`canary.surface.coinstall` says the same of a dependency both sides
require). Only an exact pin says which release of the dependency is installed; a range
lets the resolver pick an older one that may require less. The metadata is read with pip's
dry-run report, which needs no wheel where the index serves a release's metadata on its own.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Mapping, Sequence

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name

from canary.errors import InfrastructureError
from canary.surface.coinstall import core_requirements


def exact_pins(dependencies: Mapping[str, str]) -> dict[str, str]:
    """Each dependency a requirement fixes to one release (``mlx-vlm==0.7.2``): name ->
    version; a wildcard (``==0.7.*``) or a range is no pin."""
    pins: dict[str, str] = {}
    for name, spec in dependencies.items():
        try:
            specifiers = list(SpecifierSet(spec))
        except InvalidSpecifier:
            continue
        if len(specifiers) == 1 and specifiers[0].operator == "==":
            version = specifiers[0].version
            if "*" not in version:
                pins[name] = version
    return pins


def index_requirements(
    pins: Mapping[str, str], *, pip_args: Sequence[str] = ()
) -> dict[str, dict[str, str]]:
    """The core requirements of each pinned release (name -> version), as the index's
    metadata states them, read by one ``pip install --dry-run --no-deps --report``;
    ``pip_args``: where pip looks (a test's ``--no-index --find-links``). A release pip
    cannot find (no wheel for this platform, only a source archive, a typo) fails the whole
    reading."""
    command = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--dry-run",
        "--no-deps",
        "--ignore-installed",
        "--quiet",
        "--disable-pip-version-check",
        # a release published only as source would be built to read its metadata: code
        # from the index, run here; such a pin is read as not found (it narrows nothing)
        "--only-binary=:all:",
        "--report",
        "-",
        *pip_args,
        *(f"{name}=={version}" for name, version in sorted(pins.items())),
    ]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        said = [line for line in done.stderr.splitlines() if line.strip()]
        raise InfrastructureError(
            f"pip could not read the metadata of {', '.join(sorted(pins))}: "
            f"{said[-1] if said else f'exit {done.returncode}'}"
        )
    try:
        report = json.loads(done.stdout)
        installs = report["install"]
    except (ValueError, KeyError, TypeError) as error:
        raise InfrastructureError(f"pip's report is not what canary reads: {error}") from error
    found: dict[str, dict[str, str]] = {}
    for item in installs:
        metadata = item.get("metadata") or {}
        name = str(metadata.get("name", ""))
        requires = metadata.get("requires_dist") or []
        found[canonicalize_name(name)] = core_requirements(str(line) for line in requires)
    return found


def pinned_out(
    pinned: Mapping[str, Mapping[str, str]], pins: Mapping[str, str], package: str, version: str
) -> str | None:
    """Why ``version`` of ``package`` cannot be installed beside a project whose ``pins``
    (name -> version) require another (``pinned``: each pin's core requirements, as read):
    ``"its pin mlx-vlm==0.7.2 requires transformers>=5.14.0"``; None where every pin read
    allows it."""
    wanted = canonicalize_name(package)
    for name in sorted(pinned):
        spec = pinned[name].get(wanted)
        if not spec or name not in pins:
            continue
        try:
            allowed = SpecifierSet(spec).contains(version, prereleases=True)
        except InvalidSpecifier:
            continue
        if not allowed:
            return f"its pin {name}=={pins[name]} requires {package}{spec}"
    return None
