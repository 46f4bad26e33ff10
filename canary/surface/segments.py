"""A module's top-level statements, split from its text without parsing it all.

A large project is mostly code that never names upstream (unsloth's wheel: 30 MB of
Python, most of it a web backend); parsing all of it to ``ast`` costs more than the whole
extraction may. So a module is cut at its top-level ``def``/``class`` statements (with their
decorators) by one regular-expression pass that steps over strings and comments; the code
between them (imports, assignments, ``if``/``try`` blocks) is parsed at once, each function
or class only when the walker asks (it asks when the text names something bound to
upstream). Line numbers are those of the file.

A cut that does not parse (a bracket left open across a column-0 line, an odd string) is
not trusted: the whole file is parsed instead, and its real syntax error, if any, is raised.
"""

from __future__ import annotations

import ast
import bisect
import functools
import itertools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

# Where a line starts at column 0: a definition, a decorator, or another statement (not a
# closing bracket, a comment or a blank line).
_LINE_START = re.compile(
    r"^(?:(?P<definition>(?:async[ \t]+)?def\b|class\b)"
    r"|(?P<decorator>@)"
    r"|(?P<statement>[^\s#)\]}]))",
    re.MULTILINE,
)
# Only triple-quoted strings span lines. A triple quote inside a comment or a one-line string
# misleads the pairing; the cut that results does not parse, and the file is parsed whole.
_TRIPLE_QUOTE = re.compile(r"\"\"\"|'''")
# A column-0 line that continues the statement before it.
_CONTINUATION = re.compile(r"(?:else|elif|except|finally)\b")
_NAME = re.compile(r"^(?:async[ \t]+)?(def|class)[ \t]+(\w+)", re.MULTILINE)


@dataclass
class Definition:
    """A top-level ``def`` or ``class`` not parsed yet."""

    kind: str  # "def" or "class"
    name: str
    text: str
    first_line: int  # 1-based line of its first line (a decorator's)
    parse: Callable[[Definition], ast.stmt] = field(repr=False)
    _node: ast.stmt | None = field(default=None, repr=False)

    @property
    def node(self) -> ast.stmt:
        if self._node is None:
            self._node = self.parse(self)
        return self._node

    def mentions(self, names: Iterable[str]) -> bool:
        """Any of ``names`` is an identifier in its text (strings and comments too: a cheap
        superset of the names its code uses). A substring test first: most definitions
        contain none of them."""
        return any(name in self.text and _identifier(name).search(self.text) for name in names)


@functools.lru_cache(maxsize=4096)
def _identifier(name: str) -> re.Pattern[str]:
    """``name`` where it is a whole identifier: a run of word characters, less the digits
    it starts with (no identifier starts with a digit)."""
    return re.compile(rf"(?<![A-Za-z0-9_])[0-9]*{re.escape(name)}(?![A-Za-z0-9_])")


Statement = ast.stmt | Definition


def split_module(
    text: str, path: str, fallback: Callable[[str, Definition], ast.stmt]
) -> list[Statement] | None:
    """The top-level statements of ``text``: parsed ones, and :class:`Definition` for each
    top-level function or class. None when a cut does not parse (parse the file whole);
    ``fallback(path, definition)`` gives a definition whose own cut does not parse."""
    lines = _cuts(text)
    line_starts = _line_starts(text)
    statements: list[Statement] = []
    for index, (start, kind) in enumerate(lines):
        end = lines[index + 1][0] if index + 1 < len(lines) else len(line_starts)
        chunk = text[line_starts[start] : line_starts[end] if end < len(line_starts) else None]
        if kind == "code":
            try:
                tree = ast.parse("\n" * start + chunk, filename=path)
            except (SyntaxError, ValueError):
                return None
            statements.extend(tree.body)
            continue
        found = _NAME.search(chunk)
        if found is None:
            return None
        statements.append(
            Definition(found.group(1), found.group(2), chunk, start + 1, _parse(path, fallback))
        )
    return statements


def _parse(
    path: str, fallback: Callable[[str, Definition], ast.stmt]
) -> Callable[[Definition], ast.stmt]:
    def parse(definition: Definition) -> ast.stmt:
        padded = "\n" * (definition.first_line - 1) + definition.text
        try:
            body = ast.parse(padded, filename=path).body
        except (SyntaxError, ValueError):
            return fallback(path, definition)
        return body[0] if len(body) == 1 else fallback(path, definition)

    return parse


def _cuts(text: str) -> list[tuple[int, str]]:
    """(0-based line, "code" | "definition") where each run of code or each definition
    starts."""
    spans = _string_spans(text)
    span_starts = [start for start, _ in spans]
    cuts: list[tuple[int, str]] = []
    line = 0
    position = 0
    after_decorator = False
    for match in _LINE_START.finditer(text):
        at = match.start()
        index = bisect.bisect_right(span_starts, at) - 1
        if index >= 0 and spans[index][0] < at < spans[index][1]:
            continue  # inside a string
        line += text.count("\n", position, at)
        position = at
        kind = match.lastgroup
        if kind == "statement":
            if _CONTINUATION.match(text, at):
                continue
            after_decorator = False
            if not cuts or cuts[-1][1] != "code":
                cuts.append((line, "code"))
        elif kind == "decorator":
            if not after_decorator:
                cuts.append((line, "definition"))
            after_decorator = True
        else:  # a def or class: its own cut, unless its decorators began it
            if not after_decorator:
                cuts.append((line, "definition"))
            after_decorator = False
    if not cuts or cuts[0][0] != 0:
        cuts.insert(0, (0, "code"))
    return cuts


def _string_spans(text: str) -> list[tuple[int, int]]:
    spans = []
    quote, opened = None, 0
    for match in _TRIPLE_QUOTE.finditer(text):
        if quote is None:
            quote, opened = match.group(), match.start()
        elif match.group() == quote:
            spans.append((opened, match.end()))
            quote = None
    if quote is not None:
        spans.append((opened, len(text)))
    return spans


def _line_starts(text: str) -> list[int]:
    # "\n" only, as the parser counts lines (str.splitlines also splits at \f, \v, ...)
    return [0, *itertools.accumulate(len(line) + 1 for line in text.split("\n"))]
