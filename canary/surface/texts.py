"""The values extraction follows to find source anchors: upstream source text, the literal
strings a project looks for in it, and compiled patterns.

A project reads ``inspect.getsource(<upstream object>)`` into a variable, maybe dedents it,
hands it to helpers, and later applies literal texts to it (``.replace``, ``in``, ``re.sub``,
...). The walker in :mod:`canary.surface.extract` evaluates expressions to these values; a
value is a set of possibilities (``if``/``else`` and loops over ``(old, new)`` pairs give
several), never a guess: what cannot be known is ``None`` and yields no anchor.
"""

from __future__ import annotations

import ast
import itertools
from collections.abc import Iterator
from dataclasses import dataclass

# More possibilities than this (a product of literal f-string parts, a concatenation of
# alternatives) is no longer a literal worth checking.
_MAX_LITERALS = 64

# re flags as inline flags: an anchor pattern carries its own flags, so resolution matches
# it exactly as the project does without knowing the call it came from.
_INLINE_FLAGS = {
    "I": "i",
    "IGNORECASE": "i",
    "M": "m",
    "MULTILINE": "m",
    "S": "s",
    "DOTALL": "s",
    "X": "x",
    "VERBOSE": "x",
    "A": "a",
    "ASCII": "a",
}


@dataclass(frozen=True)
class Text:
    """Upstream source text: the objects whose ``getsource`` it is (``origins``), whether it
    was dedented, and the texts the project itself put into it (an anchor found in those is
    the project's own text, not upstream's). ``pending``: the source of a method a
    ``[tool.canary.surface]`` registry names only by a template (``trl.trainer.grpo_trainer.
    GRPOTrainer.{name}``): which method is known only where the code tests the method's name
    against literals, so an anchor elsewhere has no target. ``tried``: where the registry
    declares several sources, all of them in order (``pending`` is the first): an anchor is
    one per source, each read only where its own is the one read
    (:class:`~canary.surface.model.ReadFrom`)."""

    origins: frozenset[str]
    dedented: bool = False
    inserted: frozenset[str] = frozenset()
    pending: str | None = None
    # the registry's sources tried in order, when it has several
    tried: tuple[str, ...] = ()
    follow_shims: bool = False


@dataclass(frozen=True)
class Literals:
    """The literal values an expression may have (str, tuple, list, dict of them).
    ``fragments``: the constant parts of an f-string with computed parts: each must occur in
    the text for the whole to match, so each is an anchor of its own."""

    values: tuple[object, ...]
    fragments: bool = False

    def strings(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(v for v in self.values if isinstance(v, str) and v))


@dataclass(frozen=True)
class Pattern:
    """``re.compile(...)`` of literal patterns (flags folded in as inline flags)."""

    patterns: tuple[str, ...]


@dataclass(frozen=True)
class Param:
    """Inside a helper being summarised: its parameter ``index``, or the source text of the
    object passed there (``source``), maybe dedented."""

    index: int
    source: bool = False
    dedented: bool = False


Value = Text | Literals | Pattern | Param


def union(first: Value | None, second: Value | None) -> Value | None:
    """Either value (``if``/``else``, ``getsource(x) or ""``)."""
    if first is None or second is None:
        return first if second is None else second
    if isinstance(first, Text) and isinstance(second, Text):
        return Text(
            first.origins | second.origins,
            first.dedented or second.dedented,
            first.inserted | second.inserted,
            first.pending or second.pending,
        )
    if isinstance(first, Literals) and isinstance(second, Literals):
        return Literals(first.values + second.values, first.fragments or second.fragments)
    # text or a literal default (""): what matters is the text
    for value in (first, second):
        if isinstance(value, (Text, Param)):
            return value
    return first


def concatenate(first: Literals, second: Literals) -> Literals | None:
    pairs = list(itertools.islice(itertools.product(first.values, second.values), _MAX_LITERALS))
    if not all(isinstance(a, str) and isinstance(b, str) for a, b in pairs):
        return None
    return Literals(tuple(a + b for a, b in pairs), first.fragments or second.fragments)  # type: ignore[operator]


def elements(value: Literals) -> Literals | None:
    """What ``for x in value`` binds ``x`` to: list/tuple/set elements, dict keys."""
    found: list[object] = []
    for item in value.values:
        if isinstance(item, (dict, list, tuple, set, frozenset)):
            found.extend(item)
        else:
            return None  # a string iterates characters: no anchor is made of those
    return Literals(tuple(found)) if found else None


def unpack(value: Literals, count: int) -> list[Literals | None]:
    """What ``a, b = value`` binds each name to, per possibility of ``value``."""
    columns: list[list[object]] = [[] for _ in range(count)]
    for item in value.values:
        if isinstance(item, (list, tuple)) and len(item) == count:
            for column, element in zip(columns, item, strict=True):
                column.append(element)
    return [Literals(tuple(column)) if column else None for column in columns]


def dict_view(value: Literals, method: str) -> Literals | None:
    """``d.items()``/``.keys()``/``.values()`` of literal dicts, as lists."""
    found: list[object] = []
    for item in value.values:
        if not isinstance(item, dict):
            return None
        view = {"items": item.items, "keys": item.keys, "values": item.values}[method]()
        found.append(list(view))
    return Literals(tuple(found))


def inline_flags(node: ast.expr | None) -> str:
    """``(?ms)`` for ``re.M | re.DOTALL``; "" for no flags (or flags not written literally)."""
    if node is None:
        return ""
    letters = sorted(
        {
            _INLINE_FLAGS[n.attr if isinstance(n, ast.Attribute) else n.id]
            for n in ast.walk(node)
            if isinstance(n, (ast.Attribute, ast.Name))
            and (n.attr if isinstance(n, ast.Attribute) else n.id) in _INLINE_FLAGS
        }
    )
    return f"(?{''.join(letters)})" if letters else ""


def fstring_parts(node: ast.JoinedStr) -> Iterator[ast.expr | str]:
    """The parts of an f-string: constant text as ``str``, formatted values as expressions."""
    for part in node.values:
        if isinstance(part, ast.Constant) and isinstance(part.value, str):
            yield part.value
        elif isinstance(part, ast.FormattedValue):
            yield part
