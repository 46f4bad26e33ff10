"""A module's top-level statements, split from its text without parsing it all.

A large project is mostly code that never names upstream (unsloth's wheel: 30 MB of
Python, most of it a web backend); parsing all of it to ``ast`` costs more than the whole
extraction may. So a module is cut at its top-level ``def``/``class`` statements (with their
decorators) by one regular-expression pass that steps over strings and comments; the code
between them (imports, assignments, ``if``/``try`` blocks) is parsed at once, in one parse
with the definitions' lines left blank, each function or class only when the walker asks
(it asks when the text names something bound to upstream). Line numbers are those of the
file.

A cut that does not parse (a bracket left open across a column-0 line, an odd string), or
a statement of that one parse that runs into a definition's blank lines, is not trusted:
the whole file is parsed instead, and its real syntax error, if any, is raised.
"""

from __future__ import annotations

import ast
import bisect
import functools
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

# Where a line starts at column 0: a definition, a decorator, or another statement (not a
# closing bracket, a comment or a blank line). Matched at the newline before it (a literal
# the regex engine finds fast: ``^`` with MULTILINE tries every position), so the text is
# searched with a newline in front.
_LINE_START = re.compile(
    r"\n(?:(?P<definition>(?:async[ \t]+)?def\b|class\b)"
    r"|(?P<decorator>@)"
    r"|(?P<statement>[^\s#)\]}]))"
)
# Only triple-quoted strings span lines. A triple quote inside a comment or a one-line string
# misleads the pairing; the cut that results does not parse, and the file is parsed whole.
_TRIPLE_QUOTES = ('"""', "'''")
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
    cuts = _cuts(text)
    bounds = [*(offset for _, offset, _ in cuts), len(text)]
    # the code between definitions is parsed at once, each definition's lines left blank, so
    # its line numbers are the file's
    code = []
    for (_, offset, kind), end in zip(cuts, bounds[1:], strict=True):
        chunk = text[offset:end]
        code.append(chunk if kind == "code" else "\n" * chunk.count("\n"))
    try:
        parsed = ast.parse("".join(code), filename=path).body
    except (SyntaxError, ValueError):
        return None
    statements: list[Statement] = []
    position = 0
    for index, (line, offset, kind) in enumerate(cuts):
        last = cuts[index + 1][0] if index + 1 < len(cuts) else None  # 0-based, exclusive
        if kind == "code":
            while position < len(parsed) and (last is None or parsed[position].lineno <= last):
                statement = parsed[position]
                if statement.lineno <= line or (
                    last is not None and (statement.end_lineno or 0) > last
                ):
                    return None  # spans a definition's blank lines: a cut inside a statement
                statements.append(statement)
                position += 1
            continue
        chunk = text[offset : bounds[index + 1]]
        found = _NAME.search(chunk)
        if found is None:
            return None
        statements.append(
            Definition(found.group(1), found.group(2), chunk, line + 1, _parse(path, fallback))
        )
    return statements if position == len(parsed) else None


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


def _cuts(text: str) -> list[tuple[int, int, str]]:
    """(0-based line, offset, "code" | "definition") where each run of code or each
    definition starts."""
    spans = _string_spans(text)
    span_starts = [start for start, _ in spans]
    cuts: list[tuple[int, int, str]] = []
    line = 0
    position = 0
    after_decorator = False
    for match in _LINE_START.finditer("\n" + text):
        kind = match.lastgroup
        if kind == "statement" and not after_decorator and cuts and cuts[-1][2] == "code":
            continue  # more of a run of code (or a line of a string in it): no new cut
        at = match.start()  # the line's offset in text (the newline's in "\n" + text)
        index = bisect.bisect_right(span_starts, at) - 1
        if index >= 0 and spans[index][0] < at < spans[index][1]:
            continue  # inside a string
        line += text.count("\n", position, at)
        position = at
        if kind == "statement":
            if _CONTINUATION.match(text, at):
                continue
            after_decorator = False
            if not cuts or cuts[-1][2] != "code":
                cuts.append((line, at, "code"))
        elif kind == "decorator":
            if not after_decorator:
                cuts.append((line, at, "definition"))
            after_decorator = True
        else:  # a def or class: its own cut, unless its decorators began it
            if not after_decorator:
                cuts.append((line, at, "definition"))
            after_decorator = False
    if not cuts or cuts[0][0] != 0:
        cuts.insert(0, (0, 0, "code"))
    return cuts


def _string_spans(text: str) -> list[tuple[int, int]]:
    quotes = []  # (offset, quote), as a left-to-right scan for either finds them
    for quote in _TRIPLE_QUOTES:
        at = text.find(quote)
        while at >= 0:
            quotes.append((at, quote))
            at = text.find(quote, at + 3)
    quotes.sort()
    spans = []
    opening, opened = None, 0
    for at, quote in quotes:
        if opening is None:
            opening, opened = quote, at
        elif quote == opening:
            spans.append((opened, at + 3))
            opening = None
    if opening is not None:
        spans.append((opened, len(text)))
    return spans
