"""The user's pip configuration, translated into uv options.

uv ignores pip's configuration, so the user's pip settings (``pip config list``, which
includes ``PIP_*`` variables) are translated into uv arguments and environment: the
user's pip setup stays the one source of truth for where packages come from.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from canary.runtime.process import Command, RunFn

_TRUE = frozenset({"1", "true", "yes", "on"})
# pip applies [global], then [install], then PIP_* variables (shown as ":env:").
_SECTION_ORDER = ("global", "install", ":env:")
_LINE = re.compile(r"^(?P<section>[^.\s]+)\.(?P<key>[A-Za-z0-9_-]+)=(?P<value>.*)$")


@dataclass(frozen=True)
class IndexSettings:
    """How uv must be told to reach the same packages pip would."""

    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)


def read_pip_config(run: RunFn, python: str, environ: Mapping[str, str]) -> dict[str, str]:
    """The effective pip settings of ``python``'s pip; an unreadable config counts as empty
    (the ``PIP_*`` variables in ``environ`` still apply)."""
    result = run(Command((python, "-m", "pip", "config", "list"), env=environ, timeout=60))
    text = result.output if result.returncode == 0 else ""
    return parse_pip_config(text, environ)


def parse_pip_config(text: str, environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The effective install settings from ``pip config list`` output plus ``PIP_*`` variables.

    Keys come back with dashes (``extra-index-url``); later sources win, as in pip.
    """
    by_section: dict[str, dict[str, str]] = {}
    for line in text.splitlines():
        match = _LINE.match(line.strip())
        if not match:
            continue
        raw = match["value"]
        try:
            value = ast.literal_eval(raw)  # pip prints repr() of the value
        except (ValueError, SyntaxError):
            value = raw
        key = match["key"].replace("_", "-").lower()
        by_section.setdefault(match["section"], {})[key] = str(value)
    settings: dict[str, str] = {}
    for section in _SECTION_ORDER:
        settings.update(by_section.get(section, {}))
    # pip config list may be unavailable or old; the variables themselves are authoritative.
    for name, value in (environ or {}).items():
        if name.startswith("PIP_") and value:
            settings[name[4:].lower().replace("_", "-")] = value
    return settings


def uv_index_settings(pip: Mapping[str, str], environ: Mapping[str, str]) -> IndexSettings:
    """Translate pip settings into uv arguments and environment."""
    args: list[str] = []
    env: dict[str, str] = {}
    if pip.get("no-index", "").lower() in _TRUE:
        args.append("--no-index")
    if index := pip.get("index-url"):
        args += ["--index-url", index]
    extras = _split(pip.get("extra-index-url", ""))
    for url in extras:
        args += ["--extra-index-url", url]
    if extras:
        # pip picks the best version across all indexes; uv by default stops at the first
        # index that knows a name, which breaks as soon as an extra index lists one version.
        args += ["--index-strategy", "unsafe-best-match"]
    for location in _split(pip.get("find-links", "")):
        args += ["--find-links", location]
    for constraint in _split(pip.get("constraint", "")):
        args += ["--constraint", constraint]
    for host in _split(pip.get("trusted-host", "")):
        args += ["--allow-insecure-host", host]
    if (cert := pip.get("cert")) and "SSL_CERT_FILE" not in environ:
        env["SSL_CERT_FILE"] = cert
    if (proxy := pip.get("proxy")) and not any(
        name in environ for name in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy")
    ):
        env["HTTPS_PROXY"] = env["HTTP_PROXY"] = proxy
    timeout = pip.get("timeout") or pip.get("default-timeout")
    if timeout and "UV_HTTP_TIMEOUT" not in environ:
        env["UV_HTTP_TIMEOUT"] = timeout
    return IndexSettings(args=tuple(args), env=env)


def _split(value: str) -> list[str]:
    # pip splits list options on whitespace (newlines in config files, spaces in variables).
    return value.split()
