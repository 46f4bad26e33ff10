"""The upstream module names a project puts modules of its own under, ``sys.modules[name] =
module`` (a vendored model package, a compat alias): an import of one may give the project's."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

# sys.modules[<a literal or a name>] = ...: read from the text, as few files have one and
# parsing the largest (unsloth's 12,000-line import_fixes.py) costs more than the walk
_INSTALL = re.compile(rb"\b(\w+)\.modules\[\s*(?:([\"'])([\w.]+)\2|(\w+))\s*\]\s*=(?!=)")
_SYS_ALIAS = re.compile(rb"\bimport[ \t]+sys[ \t]+as[ \t]+(\w+)")
_SYS = re.compile(rb"(?m)^[ \t]*import[ \t]+(?:[\w.]+[ \t]*,[ \t]*)*sys\b(?![ \t]+as\b)")
_LITERAL = re.compile(rb"[ \t]*([\"'])([\w.]+)\1[ \t]*(?:#.*)?")


def installed_modules(
    files: Iterable[str],
    text: Callable[[str], bytes],
    is_upstream: Callable[[str], bool],
) -> dict[str, str]:
    """Each upstream submodule name some file of ``files`` binds in ``sys.modules``, with
    the first place it does so ("path:line"). The name is a literal, or a name its function
    (or the module) binds once, to a literal (prismaquant's ``pkg_name = "transformers.models.
    deepseek_v4"``); any other key is not read. A whole package put there (unsloth's ``trl``
    stand-in where trl cannot be imported) is not one: canary reads installed upstream."""
    found: dict[str, str] = {}
    for path in files:
        source = text(path)
        if b"modules[" not in source:
            continue
        names = {m.group(1) for m in _SYS_ALIAS.finditer(source)}
        if _SYS.search(source):
            names.add(b"sys")
        for match in _INSTALL.finditer(source):
            if match.group(1) not in names:
                continue
            literal = match.group(3)
            if literal is not None:
                key: bytes | None = literal
            else:
                key = _bound_once(_function_around(source, match.start()), match.group(4))
            name = key.decode() if key is not None else ""
            if "." in name and is_upstream(name):
                line = source.count(b"\n", 0, match.start()) + 1
                found.setdefault(name, f"{path}:{line}")
    return found


_DEF = re.compile(rb"[ \t]*(?:async[ \t]+)?def[ \t]")


def _function_around(source: bytes, at: int) -> bytes:
    """The text of the innermost ``def`` whose body holds position ``at`` (from the
    ``def`` to its last line indented deeper), or the whole source at module level."""
    lines = source.splitlines(keepends=True)
    index = source.count(b"\n", 0, at)
    depth = _indent(lines[index])
    for start in range(index - 1, -1, -1):  # out block by block to a def, or the module
        line = lines[start]
        if not line.strip() or line.lstrip().startswith(b"#") or _indent(line) >= depth:
            continue
        depth = _indent(line)
        if _DEF.match(line):
            end = index + 1
            while end < len(lines) and (not lines[end].strip() or _indent(lines[end]) > depth):
                end += 1
            return b"".join(lines[start:end])
        if depth == 0:
            break
    return source


def _indent(line: bytes) -> int:
    return len(line) - len(line.lstrip(b" \t"))


def _bound_once(source: bytes, name: bytes) -> bytes | None:
    """The string literal ``name`` is bound to, where ``source`` binds it exactly once."""
    binding = re.compile(rb"(?m)^[ \t]*" + re.escape(name) + rb"[ \t]*(?::[^=\n]*)?=(?!=)(.*)$")
    bound = binding.findall(source)
    if len(bound) != 1 or re.search(rb"\bfor[ \t]+" + re.escape(name) + rb"\b", source):
        return None
    literal = _LITERAL.fullmatch(bound[0])
    return literal.group(2) if literal is not None else None
