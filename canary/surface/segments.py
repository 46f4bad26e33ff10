"""A module's top-level statements, split from its text without parsing it all.

A large project is mostly code that never names upstream (unsloth's wheel: 30 MB of
Python, most of it a web backend); parsing all of it to ``ast`` costs more than the whole
extraction may. So a module is cut at its top-level ``def``/``class`` statements (with their
decorators) by one regular-expression pass that steps over strings and comments; the code
between them (imports, assignments, ``if``/``try`` blocks) is parsed at once, in one parse
with the definitions' lines left blank, each function or class only when the walker asks
(it asks when the text names something bound to upstream). A class it walks is cut the
same way at its members' indentation, so a large class is parsed only in the methods that
name something. Line numbers are those of the file.

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

# Where a line starts at an indentation (column 0 in a module, a class body's for its
# members): a definition, a decorator, or another statement (not a closing bracket, a
# comment or a blank line). Matched at the newline before it (a literal the regex engine
# finds fast: ``^`` with MULTILINE tries every position), so the text is searched with a
# newline in front.
_LINE_START = (
    r"(?:(?P<definition>(?:async[ \t]+)?def\b|class\b)"
    r"|(?P<decorator>@)"
    r"|(?P<statement>[^\s#)\]}]))"
)
# Only triple-quoted strings span lines. A triple quote inside a comment or a one-line string
# misleads the pairing; the cut that results does not parse, and the file is parsed whole.
_TRIPLE_QUOTES = ('"""', "'''")
# A line that continues the statement before it.
_CONTINUATION = re.compile(r"(?:else|elif|except|finally)\b")
_NAME = re.compile(r"^[ \t]*(?:async[ \t]+)?(def|class)[ \t]+(\w+)", re.MULTILINE)
# An indented def, class or decorator.
_MEMBER = re.compile(r"\n([ \t]+)(?:(?:async[ \t]+)?def\b|class\b|@)")


def _parsed_at(text: str, offset: int, path: str) -> ast.Module:
    """``text`` parsed as if it started ``offset`` lines into its file: padded with
    ``offset`` newlines, which the tokenizer skips in C. Moving the lines after the parse
    (``ast.increment_lineno``) walks every node in Python: measured on unsloth's 376
    modules, the padding costs 7% less of the whole walk, though each parse pays for its
    line number."""
    return ast.parse("\n" * offset + text, filename=path)


@dataclass
class Definition:
    """A top-level ``def`` or ``class``, or a member of a top-level class, not parsed yet."""

    kind: str  # "def" or "class"
    name: str
    text: str
    first_line: int  # 1-based line of its first line (a decorator's)
    path: str
    # the node from the file's own parse, for a cut that does not parse on its own
    fallback: Callable[[str, Definition], ast.stmt] = field(repr=False)
    indent: str = ""  # a member's indentation ("": top-level)
    _node: ast.stmt | None = field(default=None, repr=False)

    @property
    def node(self) -> ast.stmt:
        if self._node is None:
            self._node = self._parse()
        return self._node

    def _parse(self) -> ast.stmt:
        if self.indent:  # inside an `if` on the line before it (the class has one), so it
            # keeps its columns
            text, offset = "if 1:\n" + self.text, self.first_line - 2
        else:
            text, offset = self.text, self.first_line - 1
        try:
            body = _parsed_at(text, offset, self.path).body
        except (SyntaxError, ValueError):
            return self.fallback(self.path, self)
        if self.indent and len(body) == 1:
            body = body[0].body  # type: ignore[attr-defined]
        return body[0] if len(body) == 1 else self.fallback(self.path, self)

    def outline(self) -> ast.ClassDef | None:
        """This top-level class with a :class:`Definition` in its body for each member
        function and class (parsed only when asked, as the module's are); None where the
        members cannot be cut (walk :attr:`node`, the whole class)."""
        if self.kind != "class" or self.indent:
            return None
        spans = _string_spans(self.text)
        indent = _member_indent(self.text, spans)
        if indent is None:
            return None
        cut = self._members(indent, spans)
        outline = self._parse_class(cut[0]) if cut is not None else None
        if cut is None or outline is None:
            return None
        members = cut[1]
        statements: list[Statement] = []
        for statement in outline.body:
            member = members.get(statement.lineno)
            if member and isinstance(statement, ast.Pass) and statement.col_offset == len(indent):
                statements.append(members.pop(statement.lineno))
            else:
                statements.append(statement)
        if members:
            return None  # a member's `pass` landed inside a statement: the cut is wrong
        outline.body = statements  # type: ignore[assignment]
        return outline

    def _parse_class(self, text: str) -> ast.ClassDef | None:
        try:
            body = _parsed_at(text, self.first_line - 1, self.path).body
        except (SyntaxError, ValueError):
            return None
        return body[0] if len(body) == 1 and isinstance(body[0], ast.ClassDef) else None

    def _members(
        self, indent: str, spans: list[tuple[int, int]]
    ) -> tuple[str, dict[int, Definition]] | None:
        """The class's text with each member's first line a ``pass`` and its other lines
        blank, and the members by first line (None: a cut names no definition)."""
        cuts = _cuts(self.text, indent, spans)
        bounds = [*(offset for _, offset, _ in cuts), len(self.text)]
        skeleton: list[str] = []
        members: dict[int, Definition] = {}
        for (line, offset, kind), end in zip(cuts, bounds[1:], strict=True):
            chunk = self.text[offset:end]
            if kind == "code":
                skeleton.append(chunk)
                continue
            found = _NAME.search(chunk)
            if found is None:
                return None
            first = self.first_line + line
            members[first] = Definition(
                found.group(1), found.group(2), chunk, first, self.path, self.fallback, indent
            )
            skeleton.append(f"{indent}pass" + "\n" * chunk.count("\n"))
        return "".join(skeleton), members

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
            Definition(found.group(1), found.group(2), chunk, line + 1, path, fallback)
        )
    return statements if position == len(parsed) else None


def _cuts(
    text: str, indent: str = "", spans: list[tuple[int, int]] | None = None
) -> list[tuple[int, int, str]]:
    """(0-based line, offset, "code" | "definition") where each run of code or each
    definition at ``indent`` starts."""
    spans = _string_spans(text) if spans is None else spans
    span_starts = [start for start, _ in spans]
    cuts: list[tuple[int, int, str]] = []
    line = 0
    position = 0
    after_decorator = False
    for match in _line_start(indent).finditer("\n" + text):
        kind = match.lastgroup
        if kind == "statement" and not after_decorator and cuts and cuts[-1][2] == "code":
            continue  # more of a run of code (or a line of a string in it): no new cut
        at = match.start()  # the line's offset in text (the newline's in "\n" + text)
        if _inside(spans, span_starts, at):
            continue
        line += text.count("\n", position, at)
        position = at
        if kind == "statement":
            if _CONTINUATION.match(text, at + len(indent)):
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


def _member_indent(text: str, spans: list[tuple[int, int]]) -> str | None:
    """The indentation of a class's members: its first indented def, class or decorator
    outside a string (a wrong guess cuts nothing the outline's checks accept)."""
    starts = [start for start, _ in spans]
    for match in _MEMBER.finditer(text):
        if not _inside(spans, starts, match.start() + 1):
            return match.group(1)
    return None


@functools.lru_cache(maxsize=16)
def _line_start(indent: str) -> re.Pattern[str]:
    return re.compile(r"\n" + re.escape(indent) + _LINE_START)


def _inside(spans: list[tuple[int, int]], starts: list[int], at: int) -> bool:
    """``at`` is inside one of the triple-quoted strings ``spans`` (``starts``: theirs)."""
    index = bisect.bisect_right(starts, at) - 1
    return index >= 0 and spans[index][0] < at < spans[index][1]


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
