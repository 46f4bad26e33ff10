"""One way to open a surface: a target opened and extracted with its own configuration.

``python -m canary surface``, ``pytest --canary-surface`` and ``surface --uncovered/--stale``
all call :func:`open_surface`, so one project never gets two different surfaces.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from canary.surface.config import SurfaceConfig
from canary.surface.findings import Accepts
from canary.surface.model import Reference, Target

TARGETS_FOLDER = "surface-targets"  # under the cache: wheels of NAME==VERSION targets


@dataclass(frozen=True)
class Surface:
    """One target's surface: the project, the references it makes, and the misses its
    configuration accepts (``expected_absent``)."""

    target: Target
    references: tuple[Reference, ...]
    accepts: Accepts | None = None
    tags: tuple[str, ...] = ()  # its configuration's pins, "PKG=V1,V2" as --tags


@dataclass(frozen=True)
class OpenedSurface:
    """A surface and the files it was read from (``--stale`` reads their text)."""

    surface: Surface
    root: Path
    files: tuple[str, ...]


def open_surface(
    spec: str,
    *,
    upstream: Collection[str],
    download_dir: Path,
    offline: bool = False,
    config: Path | None = None,
    open_target: Callable[..., Any] | None = None,
    extract: Callable[..., tuple[Reference, ...]] | None = None,
) -> OpenedSurface:
    """The target ``spec`` opened (``config``: a configuration file instead of its own
    ``[tool.canary.surface]``) and its references to ``upstream`` extracted with that
    configuration: its own attributes, source registries and version parsers; its
    ``expected_absent`` becomes the surface's acceptance. ``open_target`` and ``extract``
    default to canary's (tests give fakes)."""
    if open_target is None:
        from canary.surface.targets import open_target
    if extract is None:
        from canary.surface.extract import extract
    loaded = open_target(
        spec, download_dir=download_dir, offline=offline, config=config, packages=tuple(upstream)
    )
    settings = loaded.config if loaded.config is not None else SurfaceConfig()
    root, files = _installed_layout(loaded.root, tuple(loaded.files))
    references = extract(
        root,
        files,
        upstream=tuple(upstream),
        own_attributes=settings.own_attributes,
        registries=settings.source_registries,
        version_parsers=settings.version_parsers,
    )
    surface = Surface(loaded.target, tuple(references), expected_absent(settings), settings.tags)
    return OpenedSurface(surface, root, files)


def _installed_layout(root: Path, files: tuple[str, ...]) -> tuple[Path, tuple[str, ...]]:
    """A wheel whose code all lies under ``NAME.data/purelib/`` (or ``platlib``) is read
    from there, as it is installed: modules and paths as the project knows them
    (``openrlhf/utils/x.py``, not ``openrlhf-0.11.2.data/purelib/openrlhf/utils/x.py``)."""
    prefixes = {"/".join(f.split("/")[:2]) for f in files}
    if len(prefixes) != 1:
        return root, files
    (prefix,) = prefixes
    data, _, scheme = prefix.partition("/")
    if not data.endswith(".data") or scheme not in ("purelib", "platlib"):
        return root, files
    return root / prefix, tuple(f[len(prefix) + 1 :] for f in files)


def expected_absent(config: SurfaceConfig) -> Accepts | None:
    """The configuration's ``expected_absent`` entries as an acceptance: why a miss is
    accepted, or None (it counts); None when it has none."""
    if not config.expected_absent:
        return None

    def accepts(reference: Reference, version: str) -> str | None:
        entry = config.accepted(reference, version)
        origin = f" in {config.origin}" if config.origin else ""
        return f"expected_absent{origin}: {entry.reason}" if entry else None

    return accepts
