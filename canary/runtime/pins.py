"""Named pin sets for the runtime tier: the ``[runtime.<name>]`` tables of tags.toml.

Schema::

    [runtime.oldest]
    summary = "oldest supported stack"            # required, one line
    requires-python = ">=3.11"                    # optional: the set is skipped elsewhere
    pins = { torch = "2.13.0", transformers = "4.57.6", trl = "0.25.1", peft = "0.17.1",
             accelerate = "1.13.0", datasets = "4.5.0" }

``pins`` maps a distribution name to one exact version. The packages whose behaviour the
tier tests (see :data:`REQUIRED`) must be pinned; any other package may be pinned too, and
whatever is not pinned is left to the resolver.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name
from packaging.version import InvalidVersion, Version

from canary.errors import ConfigError
from canary.tags import read_toml

# Why each one must be pinned: an unpinned one makes a pin set mean something different
# every time the index moves, and torch in particular falls back to a multi-GB CUDA build.
REQUIRED: dict[str, str] = {
    "torch": "pin torch, or the resolver pulls a multi-GB CUDA build",
    "transformers": "the Trainer internals under test",
    "trl": "SFTTrainer and its losses",
    "peft": "the adapter wrappers the fixes walk through",
    "accelerate": "it performs the backward pass and its loss division",
    "datasets": "TRL's data pipeline",
}

_SET_KEYS = frozenset({"summary", "pins", "requires-python"})
# Pin set names become directory names and `--pins` arguments.
_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]*$")
# PEP 508 distribution names.
_DIST = re.compile(r"^([A-Z0-9]|[A-Z0-9][A-Z0-9._-]*[A-Z0-9])$", re.IGNORECASE)


@dataclass(frozen=True)
class PinSet:
    """One named stack: exact versions installed together into one virtual environment."""

    name: str
    summary: str
    pins: Mapping[str, str]  # canonical distribution name -> exact version, sorted by name
    requires_python: SpecifierSet | None = field(default=None)

    def requirements(self) -> list[str]:
        """``name==version`` lines for the installer."""
        return [f"{name}=={version}" for name, version in self.pins.items()]

    def python_mismatch(self, python_version: str) -> str | None:
        """Why this set cannot run on ``python_version`` (e.g. ``"3.10.14"``), or None."""
        if self.requires_python is None or self.requires_python.contains(
            python_version, prereleases=True
        ):
            return None
        return f"needs Python {self.requires_python}, this is {python_version}"


def load_pin_sets(path: Path | str) -> dict[str, PinSet]:
    """Read the ``[runtime]`` section of tags.toml at ``path``."""
    path = Path(path)
    data = read_toml(path, hint="pass --tags-file PATH")
    runtime = data.get("runtime")
    if runtime is None:
        raise ConfigError(f"{path}: no [runtime] section; add [runtime.<name>] pin sets")
    return parse_pin_sets(runtime, str(path))


def parse_pin_sets(runtime: object, source: str) -> dict[str, PinSet]:
    """Validate a parsed ``[runtime]`` table; ``source`` names the file in errors."""
    if not isinstance(runtime, Mapping) or not runtime:
        raise ConfigError(f"{source}: [runtime] must hold at least one [runtime.<name>] table")
    sets = {}
    for name, table in runtime.items():
        where = f"{source}: [runtime.{name}]"
        if not isinstance(table, Mapping):
            raise ConfigError(
                f"{source}: [runtime] key {name!r} is not a pin set table; "
                "[runtime] holds only [runtime.<name>] tables"
            )
        if not _NAME.match(name):
            raise ConfigError(f"{where}: name must match {_NAME.pattern} (it becomes a folder)")
        sets[name] = _parse_set(name, table, where)
    return sets


def _parse_set(name: str, table: Mapping[str, object], where: str) -> PinSet:
    unknown = sorted(set(table) - _SET_KEYS)
    if unknown:
        raise ConfigError(f"{where}: unknown key(s) {unknown}; expected {sorted(_SET_KEYS)}")
    summary = table.get("summary")
    if not isinstance(summary, str) or not summary.strip():
        raise ConfigError(f"{where}: summary must be a non-empty string")
    requires_python = None
    if "requires-python" in table:
        text = table["requires-python"]
        try:
            if not isinstance(text, str):
                raise InvalidSpecifier(repr(text))
            requires_python = SpecifierSet(text)
        except InvalidSpecifier:
            raise ConfigError(
                f"{where}: requires-python = {text!r} is not a version specifier like '>=3.11'"
            ) from None
    pins = table.get("pins")
    if not isinstance(pins, Mapping) or not pins:
        raise ConfigError(f'{where}: pins must be a table of package = "exact version"')
    return PinSet(
        name=name,
        summary=summary.strip(),
        pins=_parse_pins(pins, where),
        requires_python=requires_python,
    )


def _parse_pins(pins: Mapping[str, object], where: str) -> dict[str, str]:
    parsed: dict[str, str] = {}
    for raw_name, value in pins.items():
        if not _DIST.match(raw_name):
            raise ConfigError(f"{where}: pins.{raw_name}: not a valid package name")
        name = canonicalize_name(raw_name)
        if name in parsed:
            raise ConfigError(f"{where}: pins.{raw_name}: {name} is pinned twice")
        parsed[name] = _exact_version(value, f"{where}: pins.{raw_name}")
    missing = [name for name in REQUIRED if name not in parsed]
    if missing:
        reasons = "; ".join(f"{name}: {REQUIRED[name]}" for name in missing)
        raise ConfigError(f"{where}: pins lacks {', '.join(missing)} ({reasons})")
    return dict(sorted(parsed.items()))


def _exact_version(value: object, where: str) -> str:
    # A bare version is exact by construction: "==1.2", ">=1.2" and "1.2.*" do not parse.
    if not isinstance(value, str):
        raise ConfigError(f"{where}: {value!r} must be a string holding one exact version")
    try:
        Version(value)
    except InvalidVersion:
        raise ConfigError(
            f"{where}: {value!r} is not an exact version; write the release itself, "
            'e.g. "4.57.6" (no operators, no wildcards)'
        ) from None
    return value


def select(sets: Mapping[str, PinSet], spec: str) -> list[PinSet]:
    """The sets named by ``--pins``: ``all`` or comma-separated names, in the order given."""
    if spec.strip() == "all":
        return list(sets.values())
    names = [part.strip() for part in spec.split(",") if part.strip()]
    if not names:
        raise ConfigError("--pins: name at least one pin set, or 'all'")
    unknown = [name for name in names if name not in sets]
    if unknown:
        raise ConfigError(
            f"--pins: unknown pin set(s) {', '.join(unknown)}; known: {', '.join(sets)}"
        )
    return [sets[name] for name in _unique(names)]


def _unique(names: Iterable[str]) -> list[str]:
    return list(dict.fromkeys(names))
