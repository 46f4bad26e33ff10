"""``[tool.canary.surface]``: what a project tells canary about its own surface.

In the project's ``pyproject.toml``, or in a TOML file given on the command line (there the
table may also stand at the top level); a file given on the command line is used instead
of the project's own table, not merged with it::

    [tool.canary.surface]
    own_attributes = ["_my_patched*"]     # attribute names the project sets on upstream objects
    exclude = ["templates/*.py"]          # files that are not Python meant to run
    version_parsers = ["mypkg.utils.Version"]  # the project's own Version(...) callables
    tags = ["transformers=5.5,5.6"]       # pins a package's releases, as --tags does

    [[tool.canary.surface.expected_absent]]
    target = "transformers.models.llama.modeling_llama.LlamaFlashAttention2"
    package = "transformers"              # optional
    versions = ">=4.48"                   # optional: where it is accepted as missing
    kind = "attribute"                    # optional: import, attribute, patch, source, anchor
    reason = "removed in 4.48; the fallback path handles it"

    [[tool.canary.surface.source_registries]]
    registry = "unsloth.models.rl_replacements.RL_FUNCTIONS"  # the project's dotted name
    parameter = "function"        # the parameter of each registered function holding a source
    selector = "function_name"    # optional: the parameter naming the method that source is
    source = ["trl.trainer.{key}.{class}.{name}",           # one template, or several
              "trl.experimental.{short}.{short}_trainer.{class}.{name}"]  # tried in order
    classes = { grpo_trainer = "GRPOTrainer" }   # what {class} is for each key
    placeholders = { short = { grpo_trainer = "grpo" } }  # optional: more {NAME}s per key
    follow_shims = true           # optional: a class deriving from a later one reads as it

``target`` is an fnmatch pattern on the reference's dotted target (``*`` crosses dots).

``version_parsers`` names callables (the project's, or a package's it imports them from)
that the maintainer states order release versions as ``packaging.version.Version`` does: a
version test through one of them gives its branch a window of releases, as a packaging
comparison does. Only literals that are plain release numbers (``"4.50.0"``, not
``"4.50.0.dev0"``) are read through them: that is all such a wrapper is trusted with.

A source registry declares what extraction cannot see: functions registered in a mapping of
lists (``REGISTRY["key"].append(f)``) that the project later calls with the source of an
upstream object it finds at run time. ``source`` names that object: ``{key}`` is the key the
function was registered under, ``{class}`` the ``classes`` entry for it, ``{name}`` each
method the ``selector`` parameter is compared with (``if function_name != "train": return
function``); an anchor where no comparison selected a method has no target and is skipped.
``placeholders`` gives more ``{NAME}``s the same way (``placeholders.NAME[key]``); a
template that names a placeholder with no entry for a key is not tried for that key.

Several templates say where the source is read from when upstream moved the class: on each
release the first whose owner (what ``{name}`` is looked up on: the class) exists is the
one read, and each template's anchors are references of their own
(:class:`~canary.surface.model.ReadFrom`). ``follow_shims``: a class found through one
template that derives from the class a later template names (a forwarding shim left at
the old place) is read as that later class, as a project that walks the MRO to the new
home does.
"""

from __future__ import annotations

import fnmatch
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from canary.errors import ConfigError
from canary.surface.model import Kind, Reference

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

TABLE = "[tool.canary.surface]"
_KEYS = frozenset(
    {
        "expected_absent",
        "own_attributes",
        "exclude",
        "source_registries",
        "version_parsers",
        "tags",
    }
)
_ENTRY_KEYS = frozenset({"target", "package", "versions", "kind", "reason"})
_REGISTRY_KEYS = frozenset(
    {"registry", "parameter", "selector", "source", "classes", "placeholders", "follow_shims"}
)
_FIXED_PLACEHOLDERS = frozenset({"key", "class", "name"})
_PLACEHOLDERS = re.compile(r"\{(\w*)\}")
_DOTTED = re.compile(r"[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+")


@dataclass(frozen=True)
class ExpectedAbsent:
    """A reference the project knows is missing (on some releases) and accepts."""

    target: str  # fnmatch pattern on Reference.target
    reason: str
    package: str | None = None
    versions: str | None = None  # PEP 440 specifier; None: every release
    kind: Kind | None = None

    def accepts(self, reference: Reference, version: str) -> bool:
        """Whether this entry accepts ``reference`` missing on ``version`` of its package."""
        if self.package is not None and self.package != reference.package:
            return False
        if self.kind is not None and self.kind is not reference.kind:
            return False
        if not fnmatch.fnmatchcase(reference.target, self.target):
            return False
        if self.versions is None:
            return True
        try:
            return SpecifierSet(self.versions).contains(Version(version), prereleases=True)
        except InvalidVersion:  # main, a commit: not a release a range can speak of
            return False


@dataclass(frozen=True)
class SourceRegistry:
    """Functions registered in ``registry[key]`` get, in ``parameter``, the source of
    ``sources`` (templates of ``{key}``, ``{class}``, ``{name}`` and ``placeholders``; with
    several, the first whose class exists on a release is read there)."""

    registry: str  # dotted: the project module and the mapping's name in it
    parameter: str
    sources: tuple[str, ...]
    selector: str | None = None
    classes: Mapping[str, str] = field(default_factory=dict)
    placeholders: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    follow_shims: bool = False

    def sources_of(self, key: str) -> tuple[str, ...]:
        """The dotted sources tried for functions registered under ``key``, in order,
        ``{name}`` left in: each template whose placeholders all have an entry for it."""
        values = {**self.placeholders, "class": self.classes}
        filled = []
        for template in self.sources:
            named = set(_PLACEHOLDERS.findall(template)) - {"key", "name"}
            if any(key not in values.get(n, {}) for n in named):
                continue
            text = template.replace("{key}", key)
            for n in named:
                text = text.replace(f"{{{n}}}", values[n][key])
            filled.append(text)
        return tuple(filled)


@dataclass(frozen=True)
class SurfaceConfig:
    expected_absent: tuple[ExpectedAbsent, ...] = ()
    source_registries: tuple[SourceRegistry, ...] = ()
    own_attributes: tuple[str, ...] = ()  # fnmatch patterns of attribute names
    exclude: tuple[str, ...] = ()  # fnmatch patterns of "/"-separated file paths
    version_parsers: tuple[str, ...] = ()  # dotted: module and callable
    tags: tuple[str, ...] = ()  # "PKG=V1,V2", as --tags: that package's list, no discovery
    origin: str | None = None  # the file it was read from

    def excludes(self, path: str) -> bool:
        return any(fnmatch.fnmatchcase(path, pattern) for pattern in self.exclude)

    def accepted(self, reference: Reference, version: str) -> ExpectedAbsent | None:
        """The entry that accepts ``reference`` missing on ``version``, if any."""
        return next((e for e in self.expected_absent if e.accepts(reference, version)), None)


def load_config(path: Path) -> SurfaceConfig:
    """The surface configuration in ``path``: a ``pyproject.toml`` (its
    ``[tool.canary.surface]``, empty when it has none) or a TOML file of its own."""
    try:
        data = tomllib.loads(path.read_text("utf-8"))
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the surface configuration: {exc}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: not valid TOML ({exc}); fix the file") from None
    table = data.get("tool", {}).get("canary", {}).get("surface")
    if table is None and path.name != "pyproject.toml":
        table = data  # a file of its own: the table's keys at the top level
    return config_from_table(table or {}, origin=str(path))


def config_from_table(table: Mapping[str, Any], *, origin: str) -> SurfaceConfig:
    if not isinstance(table, Mapping):
        raise ConfigError(f"{origin}: {TABLE} must be a table")
    unknown = sorted(set(table) - _KEYS)
    if unknown:
        raise ConfigError(
            f"{origin}: unknown key {unknown[0]!r} in {TABLE}; the keys are "
            f"{', '.join(sorted(_KEYS))}"
        )
    entries = table.get("expected_absent", [])
    if not isinstance(entries, list):
        raise ConfigError(
            f"{origin}: expected_absent in {TABLE} must be an array of tables "
            f"([[tool.canary.surface.expected_absent]])"
        )
    registries = table.get("source_registries", [])
    if not isinstance(registries, list):
        raise ConfigError(
            f"{origin}: source_registries in {TABLE} must be an array of tables "
            f"([[tool.canary.surface.source_registries]])"
        )
    return SurfaceConfig(
        expected_absent=tuple(_entry(e, i, origin) for i, e in enumerate(entries)),
        source_registries=tuple(_registry(r, i, origin) for i, r in enumerate(registries)),
        own_attributes=_strings(table, "own_attributes", origin),
        exclude=_strings(table, "exclude", origin),
        version_parsers=_version_parsers(table, origin),
        tags=_pins(table, origin),
        origin=origin,
    )


def _strings(table: Mapping[str, Any], key: str, origin: str) -> tuple[str, ...]:
    value = table.get(key, [])
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise ConfigError(
            f'{origin}: {key} in {TABLE} must be a list of non-empty strings (["pattern", ...])'
        )
    return tuple(value)


def _pins(table: Mapping[str, Any], origin: str) -> tuple[str, ...]:
    pins = _strings(table, "tags", origin)
    bad = next((pin for pin in pins if not re.fullmatch(r"[\w.-]+=\S+", pin)), None)
    if bad is not None:
        raise ConfigError(
            f"{origin}: tags in {TABLE} are PKG=V1,V2 as --tags takes them (tags = "
            f'["transformers=5.5,5.6"]); {bad!r} is not one'
        )
    return pins


def _version_parsers(table: Mapping[str, Any], origin: str) -> tuple[str, ...]:
    value = table.get("version_parsers", [])
    if not isinstance(value, list):
        bad: object = value
    else:
        bad = next((e for e in value if not isinstance(e, str) or not _DOTTED.fullmatch(e)), None)
    if bad is not None or not isinstance(value, list):
        raise ConfigError(
            f"{origin}: version_parsers in {TABLE} must be a list of dotted names, each a "
            f'module and the callable in it (version_parsers = ["mypkg.utils.Version"]); '
            f"{bad!r} is not one"
        )
    return tuple(value)


def _table(entry: object, where: str, keys: frozenset[str], required: str) -> Mapping[str, Any]:
    """``entry`` as a table of only ``keys``; a ConfigError naming ``where`` otherwise."""
    if not isinstance(entry, Mapping):
        raise ConfigError(f"{where} must be a table with {required}")
    unknown = sorted(set(entry) - keys)
    if unknown:
        raise ConfigError(
            f"{where}: unknown key {unknown[0]!r}; the keys are {', '.join(sorted(keys))}"
        )
    return entry


def _entry(entry: object, index: int, origin: str) -> ExpectedAbsent:
    where = f"{origin}: expected_absent[{index}]"
    entry = _table(entry, where, _ENTRY_KEYS, "target and reason")
    for key in ("target", "reason"):
        if not isinstance(entry.get(key), str) or not entry[key].strip():
            raise ConfigError(
                f"{where}: {key} is required (a non-empty string): "
                + (
                    "say why the finding is accepted"
                    if key == "reason"
                    else "the dotted upstream target, * allowed"
                )
            )
    for key in ("package", "versions", "kind"):
        if key in entry and not isinstance(entry[key], str):
            raise ConfigError(f"{where}: {key} must be a string")
    versions = entry.get("versions")
    if versions is not None:
        try:
            SpecifierSet(versions)
        except InvalidSpecifier:
            raise ConfigError(
                f"{where}: versions {versions!r} is not a version specifier (e.g. '>=4.48,<5')"
            ) from None
    kind = entry.get("kind")
    if kind is not None and kind not in {k.value for k in Kind}:
        raise ConfigError(
            f"{where}: kind {kind!r} is not one of {', '.join(k.value for k in Kind)}"
        )
    return ExpectedAbsent(
        target=entry["target"],
        reason=entry["reason"],
        package=entry.get("package"),
        versions=versions,
        kind=Kind(kind) if kind is not None else None,
    )


def _registry(entry: object, index: int, origin: str) -> SourceRegistry:
    where = f"{origin}: source_registries[{index}]"
    entry = _table(entry, where, _REGISTRY_KEYS, "registry, parameter and source")
    for key in ("registry", "parameter"):
        if not isinstance(entry.get(key), str) or not entry[key].strip():
            raise ConfigError(f"{where}: {key} is required (a non-empty string)")
    if "." not in entry["registry"]:
        raise ConfigError(
            f"{where}: registry {entry['registry']!r} must be dotted: the project module and "
            f"the mapping's name in it (mypkg.rl.RL_FUNCTIONS)"
        )
    selector = entry.get("selector")
    if selector is not None and (not isinstance(selector, str) or not selector):
        raise ConfigError(f"{where}: selector must be a parameter name (a non-empty string)")
    classes = _key_table(entry.get("classes", {}), f"{where}: classes", "Class")
    placeholders = entry.get("placeholders", {})
    if not isinstance(placeholders, Mapping):
        raise ConfigError(
            f'{where}: placeholders must be a table of tables ({{ short = {{ key = "x" }} }})'
        )
    tables = {
        name: _key_table(table, f"{where}: placeholders.{name}", "x")
        for name, table in placeholders.items()
    }
    if fixed := sorted(set(tables) & _FIXED_PLACEHOLDERS):
        raise ConfigError(f"{where}: placeholders.{fixed[0]} is not one to give: it is fixed")
    follow = entry.get("follow_shims", False)
    if not isinstance(follow, bool):
        raise ConfigError(f"{where}: follow_shims must be true or false")
    sources = _sources(entry.get("source"), where)
    known = _FIXED_PLACEHOLDERS | set(tables)
    for source in sources:
        placeholders_in = set(_PLACEHOLDERS.findall(source))
        if placeholders_in - known:
            bad = sorted(placeholders_in - known)[0]
            raise ConfigError(
                f"{where}: source has {{{bad}}}; the placeholders are "
                + ", ".join(f"{{{n}}}" for n in sorted(known))
            )
        if ("name" in placeholders_in) != (selector is not None):
            raise ConfigError(
                f"{where}: source {source!r} and selector go together: {{name}} is the method "
                f"the selector parameter is compared with; give both or neither"
            )
        if "class" in placeholders_in and not classes:
            raise ConfigError(f'{where}: source uses {{class}}: give classes = {{ key = "Class" }}')
    if follow and len(sources) < 2:
        raise ConfigError(
            f"{where}: follow_shims reads a class as the class a later source names: "
            "give source as a list of two or more"
        )
    return SourceRegistry(
        registry=entry["registry"],
        parameter=entry["parameter"],
        sources=sources,
        selector=selector,
        classes=classes,
        placeholders=tables,
        follow_shims=follow,
    )


def _sources(value: object, where: str) -> tuple[str, ...]:
    """``source``: one template, or a list of them tried in order."""
    listed = value if isinstance(value, list) else [value]
    if not listed or not all(isinstance(v, str) and v.strip() for v in listed):
        raise ConfigError(
            f"{where}: source is required: a dotted template, or a list of them tried in order"
        )
    return tuple(listed)


def _key_table(table: object, where: str, example: str) -> dict[str, str]:
    if not isinstance(table, Mapping) or not all(isinstance(v, str) and v for v in table.values()):
        raise ConfigError(f'{where} must be a table of strings ({{ key = "{example}" }})')
    return dict(table)
