"""The expression layer of the code index: one file's text and normalised expressions.

Every expression a check compares is *normalised* with :func:`ast.unparse`: line breaks,
redundant parentheses, quote style and spacing are gone, so an upstream reformat is not
drift. :class:`SourceText` is the file's text shared by every summary that can show its
exact source. Nothing here knows the summary types built from these pieces.
"""

from __future__ import annotations

import ast
import enum
import functools
import re
import sys
from collections.abc import Iterator

#: The Python that normalises: ``ast.unparse`` output is not guaranteed stable across
#: Python releases, so it is part of every cache key.
PYTHON = f"{sys.version_info[0]}.{sys.version_info[1]}"

Span = tuple[int, int, int, int]


class _NotLiteral(enum.Enum):
    # An Enum member is a picklable singleton: it unpickles as the very same object, so
    # ``value is NOT_LITERAL`` keeps working on a warm run.
    NOT_LITERAL = "NOT_LITERAL"

    def __repr__(self) -> str:
        return "NOT_LITERAL"


#: ``Assignment.literal`` / ``ClassAttribute.literal`` when the value is not a literal.
NOT_LITERAL = _NotLiteral.NOT_LITERAL


class SourceText:
    """One file's text, shared by every summary of that file that can show its source.

    Pickled once per module (pickle keeps one copy of a shared object), instead of a copy
    of every class's, function's and call's text: a class's source repeats its methods',
    and a call's repeats the calls nested in it. The lines are split on first use only:
    almost no check reads ``source``.
    """

    __slots__ = ("_lines", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self._lines: list[str] | None = None

    def __getstate__(self) -> str:
        return self.text

    def __setstate__(self, text: str) -> None:
        self.text = text
        self._lines = None

    def __eq__(self, other: object) -> bool:
        return self is other or (isinstance(other, SourceText) and self.text == other.text)

    def __hash__(self) -> int:
        return hash(self.text)

    def __repr__(self) -> str:
        return f"<file text, {len(self.text)} characters>"

    def segment(self, span: Span) -> str:
        """The text between ``(first line, first column, last line, end column)``: 0-based
        lines, columns in UTF-8 bytes as ``ast`` reports them."""
        if self._lines is None:
            self._lines = _split_lines(self.text)
        first, start, last, end = span
        if first == last:
            return self._cut(first, start, end)
        return (
            self._cut(first, start, None)
            + "".join(self._lines[first + 1 : last])
            + self._cut(last, 0, end)
        )

    def _cut(self, index: int, start: int, end: int | None) -> str:
        line = self._lines[index]  # type: ignore[index]
        if line.isascii():  # col offsets are UTF-8 byte offsets; equal to str offsets here
            return line[start:end]
        return line.encode("utf-8")[start:end].decode("utf-8", errors="replace")


_LINE_BREAK = re.compile(r"(?<=\n)|(?<=\r)(?!\n)")  # the parser's notion of lines: \n, \r\n, \r
# What str.splitlines also breaks at but the parser does not.
_NOT_LINE_BREAKS = re.compile("[\v\f\x1c\x1d\x1e\x85\u2028\u2029]")


def _split_lines(text: str) -> list[str]:
    # splitlines is many times faster than the regex, and agrees with it unless the text
    # holds one of the characters only splitlines breaks at.
    if _NOT_LINE_BREAKS.search(text) is None:
        lines = text.splitlines(keepends=True)
        if not lines or lines[-1][-1] in "\r\n":
            lines.append("")  # the regex's empty last line
        return lines
    return _LINE_BREAK.split(text)


class Normaliser:
    """Normalised text and spans of the nodes of one file's syntax tree.

    ``line_offset`` is added to every line number: a function body re-parsed on its own
    starts at line 1.
    """

    def __init__(self, text: SourceText, line_offset: int = 0) -> None:
        self.text = text
        self.line_offset = line_offset

    def span(self, node: ast.AST) -> Span:
        first, last = node.lineno - 1 + self.line_offset, node.end_lineno - 1 + self.line_offset
        return (first, node.col_offset, last, node.end_col_offset)

    @staticmethod
    def block_span(
        node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef,
    ) -> Span:
        # Whole lines from the first decorator, so indentation stays as in the file.
        first = node.decorator_list[0].lineno if node.decorator_list else node.lineno
        return (first - 1, 0, node.end_lineno - 1, node.end_col_offset)

    def unparse(self, node: ast.AST) -> str:
        # Most expressions a summary normalises are names and dotted names; ast.unparse
        # costs a visitor per node, which made it half the cost of a parse. Interned, so
        # the pickle memo stores each distinct text of a file once.
        kind = type(node)
        if kind is ast.Name:
            return sys.intern(node.id)
        if kind is ast.Attribute:
            parts = [node.attr]
            value = node.value
            while type(value) is ast.Attribute:
                parts.append(value.attr)
                value = value.value
            if type(value) is ast.Name:
                parts.append(value.id)
                return sys.intern(".".join(reversed(parts)))
        elif kind is ast.Constant:
            value = node.value
            if value is None or value is True or value is False or type(value) is int:
                return sys.intern(repr(value))
        try:
            return sys.intern(ast.unparse(node))
        except RecursionError:  # absurdly deep expression: original text beats failing
            return self.text.segment(self.span(node))


@functools.lru_cache(maxsize=1024)
def normalised_text(code: str) -> str:
    """``code`` (an expression or statements) as the running Python's :func:`ast.unparse`
    prints it, or unchanged where it does not parse.

    How code written in canary's own source is made comparable, as text, with the normalised
    text of an index: the printer differs between Pythons (3.10 writes ``for (k, v) in``
    where 3.11 writes ``for k, v in``), so a literal copied from one Python's output would
    match there only.
    """
    for mode in ("eval", "exec"):
        try:
            return ast.unparse(ast.parse(code, mode=mode))
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            continue
    return code


AUG_OPS = {
    ast.Add: "+",
    ast.Sub: "-",
    ast.Mult: "*",
    ast.MatMult: "@",
    ast.Div: "/",
    ast.FloorDiv: "//",
    ast.Mod: "%",
    ast.Pow: "**",
    ast.LShift: "<<",
    ast.RShift: ">>",
    ast.BitAnd: "&",
    ast.BitOr: "|",
    ast.BitXor: "^",
}


def literal_value(node: ast.AST) -> object:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return NOT_LITERAL


def literal_of_text(text: str) -> object:
    try:
        return ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def parse_block(text: SourceText, span: Span) -> tuple[ast.FunctionDef | ast.AsyncFunctionDef, int]:
    """A function's own definition re-parsed from its block of the file, and the line
    offset that maps the block's line numbers back to the file's. Columns are unchanged
    (the lines are the file's), so spans still index the whole file's text."""
    block = text.segment(span)
    first = span[0]
    # An indented block (a method) only parses inside a compound statement. Form feeds
    # reset the tokenizer's column, so the first character alone can mislead: try the
    # other reading when the first one is refused.
    indented = block.lstrip("\f")[:1] in (" ", "\t")
    try:
        tree = ast.parse("if 1:\n" + block if indented else block)
    except IndentationError:
        indented = not indented
        tree = ast.parse("if 1:\n" + block if indented else block)
    node = tree.body[0].body[0] if indented else tree.body[0]
    return node, first - 1 if indented else first


def bound_names(target: ast.AST) -> Iterator[ast.AST]:
    """Leaf targets of a (possibly unpacking) assignment target."""
    if isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from bound_names(element)
    elif isinstance(target, ast.Starred):
        yield from bound_names(target.value)
    else:
        yield target
