"""The project's private functions it binds onto upstream under their own name and never
calls itself: only upstream's code, through the name bound, could run them."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import replace

from canary.surface import callers
from canary.surface.extract.uses import Use
from canary.surface.model import Kind

Prose = Callable[[str, int, int], bool]  # (path, line, byte column) in a comment or docstring


def mark_uncalled(
    uses: Sequence[Use], files: Iterable[str], text: Callable[[str], bytes], prose: Prose
) -> list[Use]:
    """``uses``, with ``uncalled`` set on each binding of a private function of the project
    onto upstream under the function's own name (``LlamaModel._prepare_decoder_attention_mask
    = _prepare_decoder_attention_mask``) where the project's text holds that name nowhere but
    on a line that defines a function of it, on the line of such a binding, and in prose (a
    comment, a docstring). Any other occurrence (``self._f()``, an import of it, a string)
    may be a call, and leaves the binding as it was."""
    bindings = [use for use in uses if _binds_own_private_function(use)]
    if not bindings:
        return list(uses)
    lines: dict[str, set[tuple[str, int]]] = {}
    for use in bindings:
        lines.setdefault(_name(use), set()).add((use.path, use.line))
    files = tuple(files)
    uncalled = {
        name for name, at in lines.items() if _only_defined_and_bound(name, at, files, text, prose)
    }
    marked = {id(use) for use in bindings if _name(use) in uncalled}
    return [replace(use, uncalled=True) if id(use) in marked else use for use in uses]


def _binds_own_private_function(use: Use) -> bool:
    return (
        use.kind is Kind.PATCH
        and use.replaces
        and use.exports
        and use.function
        and callers.private(_name(use))
    )


def _name(use: Use) -> str:
    return use.target.rpartition(".")[2]


def _only_defined_and_bound(
    name: str,
    bindings: set[tuple[str, int]],
    files: Sequence[str],
    text: Callable[[str], bytes],
    prose: Prose,
) -> bool:
    word = name.encode()
    for path in files:
        source = text(path)
        if word not in source:
            continue
        lines = source.splitlines()
        for line, column, at in callers.occurrences(source, word):
            if (path, line) in bindings or (path, _value_of(source, at)) in bindings:
                continue
            if _defines(lines[line - 1], word):
                continue
            if not prose(path, line, column):
                return False
    return True


def _value_of(source: bytes, at: int) -> int:
    """The line of the ``=`` whose whole value the word at ``at`` is, written on the lines
    after it (``X._f = (\n    _f\n)``); 0: none."""
    before = source[:at].rstrip(b" \t\r\n(\\")
    if not before.endswith(b"=") or before.endswith((b"==", b"!=", b"<=", b">=")):
        return 0
    return source.count(b"\n", 0, len(before)) + 1


def _defines(line: bytes, name: bytes) -> bool:
    """The line defines a function ``name``, at any depth."""
    indent = len(line) - len(line.lstrip(b" \t"))
    match = callers.DEFINITION.match(line, indent)
    return match is not None and match.group(1) == name
