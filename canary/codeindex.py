"""A stdlib-``ast`` summary of one upstream Python file.

:func:`parse_module` reads a file's text (never importing it) and returns a :class:`Module`:
its classes, functions, methods, signatures, class attributes, module-level assignments and
imports, and for every function the calls, assignments and returns in its body. The summary
is plain frozen dataclasses holding strings, ints and tuples, no ``ast`` nodes, so it pickles
compactly; the cache stores it by content hash and a warm run unpickles it instead of
parsing.

Two kinds of text are kept, on purpose:

* ``source`` fields (of :class:`Function`, :class:`Class` and :class:`Call`) are the exact
  text of the file, for showing to people and for the rare genuinely textual check. They
  are cut on demand from one shared copy of the file's text, and a function's body summary
  (``calls``, ``assignments``, ``returns``, ``names``) is built on first use from its own
  text: a parse indexes only what every check may ask of a file (definitions, signatures,
  bindings), which made parsing 2.4x faster and the pickled summaries 2.5x smaller.
* Every expression a check compares (``Call.func``/``args``/``keywords``, ``Assignment``
  targets and values, guards, returns, bases, decorators, defaults, annotations) is
  *normalised* with :func:`ast.unparse`: line breaks, redundant parentheses, quote style and
  spacing are gone. Checks compare normalised text, so an upstream reformat is not drift.

Scope rules:

* Module level (and class-body level) includes statements nested in ``if``/``try``/
  ``with``/``for``/``while``/``match`` blocks (``if TYPE_CHECKING:``, ``try: ... except
  ImportError:``), but never the bodies of functions or classes. A later statement replaces
  an earlier binding of the same name, except across alternatives: the ``if`` branch beats
  its ``else``/``elif`` branches and a ``try`` body (plus its ``else``) beats its
  ``except`` handlers, because the primary branch is the code that runs when the optional
  dependency is installed, which is the case a check is about.
* A :class:`Function` records its *own* body: calls, assignments and names inside nested
  ``def``/``class``/``lambda`` bodies are left out, but their decorators, default values and
  bases are kept, because those run in the enclosing body. Comprehensions are part of the
  enclosing body.
* A guard is the test of an enclosing ``if`` statement or conditional expression
  (``a if test else b``), outermost first; the ``else`` side is rendered ``not (<test>)``,
  so ``elif b:`` under ``if a:`` is guarded by ``("not (a)", "b")``.

Cache keys must include :data:`INDEX_KEY` (the summary shape *and* the Python minor
version, because ``ast.unparse`` output is not guaranteed stable across Python releases).
A summary looked up by content hash alone may have been built for another version of the
same file; :meth:`Module.relabeled` gives it the path and origin its messages should name.
"""

from __future__ import annotations

import ast
import dataclasses
import difflib
import enum
import hashlib
import io
import re
import sys
import tokenize
from collections.abc import Iterator
from dataclasses import dataclass, field

from canary.errors import Drift, ParseError, Subject

__all__ = [
    "INDEX_FORMAT",
    "INDEX_KEY",
    "NOT_LITERAL",
    "Assignment",
    "Call",
    "Class",
    "ClassAttribute",
    "Function",
    "Import",
    "Module",
    "Param",
    "Signature",
    "parse_module",
]

#: Bump whenever the shape or meaning of the summary changes; part of every cache key.
INDEX_FORMAT = 2

_PYTHON = f"{sys.version_info[0]}.{sys.version_info[1]}"

#: The non-content part of a cache key: summary format and the Python that built it.
INDEX_KEY = f"codeindex-v{INDEX_FORMAT}-py{_PYTHON}"

# Drift messages list at most this many candidate names, closest first.
_LISTED = 15


class _NotLiteral(enum.Enum):
    # An Enum member is a picklable singleton: it unpickles as the very same object, so
    # ``value is NOT_LITERAL`` keeps working on a warm run.
    NOT_LITERAL = "NOT_LITERAL"

    def __repr__(self) -> str:
        return "NOT_LITERAL"


#: ``Assignment.literal`` / ``ClassAttribute.literal`` when the value is not a literal.
NOT_LITERAL = _NotLiteral.NOT_LITERAL

POSITIONAL_ONLY = "positional_only"
POSITIONAL_OR_KEYWORD = "positional_or_keyword"
VAR_POSITIONAL = "var_positional"
KEYWORD_ONLY = "keyword_only"
VAR_KEYWORD = "var_keyword"


# --------------------------------------------------------------------------- summary types


class _Text:
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
        return self is other or (isinstance(other, _Text) and self.text == other.text)

    def __hash__(self) -> int:
        return hash(self.text)

    def __repr__(self) -> str:
        return f"<file text, {len(self.text)} characters>"

    def segment(self, span: tuple[int, int, int, int]) -> str:
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


@dataclass(frozen=True, slots=True)
class Param:
    """One parameter of a signature; ``default``/``annotation`` are normalised text."""

    name: str
    kind: str
    default: str | None = None
    annotation: str | None = None

    def format(self, *, annotations: bool = False) -> str:
        star = {VAR_POSITIONAL: "*", VAR_KEYWORD: "**"}.get(self.kind, "")
        text = star + self.name
        if annotations and self.annotation is not None:
            text += f": {self.annotation}"
            if self.default is not None:
                text += f" = {self.default}"
        elif self.default is not None:
            text += f"={self.default}"
        return text


@dataclass(frozen=True, slots=True)
class Signature:
    params: tuple[Param, ...]

    @property
    def names(self) -> tuple[str, ...]:
        """Every parameter name in order, ``*args``/``**kwargs`` names included."""
        return tuple(p.name for p in self.params)

    def has(self, name: str) -> bool:
        """A parameter literally named ``name`` (being swallowed by ``**kwargs`` does not count)."""
        return any(p.name == name for p in self.params)

    def param(self, name: str) -> Param | None:
        for p in self.params:
            if p.name == name:
                return p
        return None

    @property
    def keyword_only(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params if p.kind == KEYWORD_ONLY)

    @property
    def var_positional(self) -> str | None:
        return next((p.name for p in self.params if p.kind == VAR_POSITIONAL), None)

    @property
    def var_keyword(self) -> str | None:
        return next((p.name for p in self.params if p.kind == VAR_KEYWORD), None)

    def accepts_keyword(self, name: str) -> bool:
        """Whether ``f(name=...)`` binds: a named, non-positional-only param, or ``**kwargs``."""
        p = self.param(name)
        if p is not None and p.kind in (POSITIONAL_OR_KEYWORD, KEYWORD_ONLY):
            return True
        return self.var_keyword is not None

    def format(self, *, annotations: bool = False) -> str:
        parts: list[str] = []
        previous = None
        for p in self.params:
            if previous == POSITIONAL_ONLY and p.kind != POSITIONAL_ONLY:
                parts.append("/")
            if p.kind == KEYWORD_ONLY and previous not in (KEYWORD_ONLY, VAR_POSITIONAL):
                parts.append("*")
            parts.append(p.format(annotations=annotations))
            previous = p.kind
        if previous == POSITIONAL_ONLY:
            parts.append("/")
        return "(" + ", ".join(parts) + ")"

    def __str__(self) -> str:
        # Messages show names and defaults only; annotations are noise there.
        return self.format()


@dataclass(frozen=True, slots=True)
class Call:
    """One call expression inside a function body."""

    func: str  # normalised callee: "hasattr", "self.accelerator.backward", "super().__init__"
    args: tuple[str, ...]  # normalised positional args; a starred one reads "*args"
    keywords: tuple[tuple[str | None, str], ...]  # (name, value); name None for ``**value``
    line: int
    guards: tuple[str, ...]
    _text: _Text = field(repr=False)
    _span: tuple[int, int, int, int] = field(repr=False)
    name: str | None = None  # last component of the callee (Name id / Attribute attr)

    @property
    def source(self) -> str:
        """The exact text of the whole call."""
        return self._text.segment(self._span)

    def arg(self, index: int) -> str | None:
        return self.args[index] if -len(self.args) <= index < len(self.args) else None

    def keyword(self, name: str) -> str | None:
        for key, value in self.keywords:
            if key == name:
                return value
        return None

    @property
    def literal_args(self) -> tuple[object, ...]:
        """``ast.literal_eval`` of each positional arg, ``None`` where it is not a literal."""
        # Evaluated on demand from the normalised text rather than stored: almost no check
        # asks, and storing a value per argument would bloat every cached summary.
        return tuple(_literal_of_text(a) for a in self.args)


@dataclass(frozen=True, slots=True)
class Assignment:
    """``=``, augmented (``op`` "/" for "/=") or annotated assignment with a value; ``:=`` too."""

    targets: tuple[str, ...]  # normalised, one per ``=``: ``a = b = 0`` -> ("a", "b")
    op: str | None  # None for "=", ":=" for a walrus, "/" for "/=", ...
    value: str
    literal: object  # ast.literal_eval(value), else NOT_LITERAL
    line: int
    guards: tuple[str, ...]
    unpacked: tuple[str, ...] = ()  # elements of tuple/list targets: ``a, (b, *c) = x`` -> a, b, c

    def assigns(self, target: str) -> bool:
        return target in self.targets or target in self.unpacked


@dataclass(frozen=True, slots=True)
class Function:
    name: str
    qualname: str  # "Trainer.compute_loss"
    signature: Signature
    decorators: tuple[str, ...]
    is_async: bool
    line: int  # the ``def`` line (decorators may start earlier; ``source`` includes them)
    end_line: int
    _text: _Text = field(repr=False)
    _span: tuple[int, int, int, int] = field(repr=False)
    # The body summary (calls, assignments, returns, names), built on first use from the
    # function's own text: checks read the bodies of a few functions per file, and walking
    # every body was most of the cost of a parse (and of the pickled size). Derived from
    # ``_text`` and ``_span``, so it takes no part in equality.
    _body: tuple | None = field(default=None, repr=False, compare=False)

    @property
    def source(self) -> str:
        """The exact text of the definition, from its first decorator's line."""
        return self._text.segment(self._span)

    @property
    def calls(self) -> tuple[Call, ...]:
        """Source order (by start position; an outer call before the calls inside it)."""
        return self._walked()[0]

    @property
    def assignments(self) -> tuple[Assignment, ...]:
        return self._walked()[1]

    @property
    def returns(self) -> tuple[str, ...]:
        """Normalised value of each ``return <expr>``; bare returns skipped."""
        return self._walked()[2]

    @property
    def names(self) -> frozenset[str]:
        """Every Name id and Attribute attr in the body."""
        return self._walked()[3]

    def _walked(self) -> tuple:
        body = self._body
        if body is None:
            body = _walk_function(self._text, self._span)
            object.__setattr__(self, "_body", body)  # a cache, not a change of value
        return body

    def __getstate__(self) -> tuple:
        # Pickled without the body summary: it is rebuilt on demand, and a pickle written
        # after a check read it would otherwise carry it.
        return tuple(None if name == "_body" else getattr(self, name) for name in _FUNCTION_FIELDS)

    def __setstate__(self, state: tuple) -> None:
        for name, value in zip(_FUNCTION_FIELDS, state, strict=True):
            object.__setattr__(self, name, value)

    def calls_to(self, func: str) -> tuple[Call, ...]:
        """Calls whose normalised callee is exactly ``func`` ("self.accelerator.backward")."""
        return tuple(c for c in self.calls if c.func == func)

    def calls_named(self, name: str) -> tuple[Call, ...]:
        """Calls whose callee's last component is ``name``: "backward" matches
        ``self.accelerator.backward(...)`` and ``backward(...)``."""
        return tuple(c for c in self.calls if c.name == name)

    def assignments_to(self, target: str) -> tuple[Assignment, ...]:
        """Assignments to exactly ``target`` (normalised), including as an element of an
        unpacking target (``loss, outputs = ...`` assigns "loss")."""
        return tuple(a for a in self.assignments if a.assigns(target))

    def mentions(self, name: str) -> bool:
        return name in self.names


_FUNCTION_FIELDS = tuple(f.name for f in dataclasses.fields(Function))


@dataclass(frozen=True, slots=True)
class ClassAttribute:
    name: str
    value: str | None  # normalised; None for a bare annotation (``field: int``)
    literal: object
    line: int
    annotation: str | None = None


@dataclass(frozen=True, slots=True)
class Class:
    name: str
    qualname: str  # "Outer.Inner" for a nested class
    bases: tuple[str, ...]  # normalised; keywords such as ``metaclass=`` excluded
    decorators: tuple[str, ...]
    line: int
    end_line: int
    _text: _Text = field(repr=False)
    _span: tuple[int, int, int, int] = field(repr=False)
    attributes: dict[str, ClassAttribute]
    methods: dict[str, Function]
    classes: dict[str, Class]
    # Kept so a missing method/attribute can be reported against the right file.
    path: str = ""
    origin: str = ""

    @property
    def source(self) -> str:
        """The exact text of the class statement, from its first decorator's line."""
        return self._text.segment(self._span)

    @property
    def where(self) -> str:
        return _where(self.path, self.origin)

    def has_method(self, name: str) -> bool:
        return name in self.methods

    def declares(self, name: str) -> bool:
        """Bound in this class's own body (attribute, method or nested class); bases are not
        consulted."""
        return name in self.attributes or name in self.methods or name in self.classes

    def method(self, name: str) -> Function:
        try:
            return self.methods[name]
        except KeyError:
            raise Drift(
                f"{self.qualname}.{name}: class {self.name} in {self.where} has no method "
                f"{name!r}; it has: {_listing(name, self.methods)}{self._other_kind(name)}",
                subject=self._subject(name),
            ) from None

    def attribute(self, name: str) -> ClassAttribute:
        try:
            return self.attributes[name]
        except KeyError:
            raise Drift(
                f"{self.qualname}.{name}: class {self.name} in {self.where} has no class "
                f"attribute {name!r}; it has: {_listing(name, self.attributes)}"
                f"{self._other_kind(name)}",
                subject=self._subject(name),
            ) from None

    def cls(self, name: str) -> Class:
        """A class nested in this one."""
        try:
            return self.classes[name]
        except KeyError:
            raise Drift(
                f"{self.qualname}.{name}: class {self.name} in {self.where} has no nested "
                f"class {name!r}; nested classes: {_listing(name, self.classes)}"
                f"{self._other_kind(name)}",
                subject=self._subject(name),
            ) from None

    def _subject(self, name: str) -> Subject:
        return Subject(self.path or None, f"{self.qualname}.{name}")

    def _other_kind(self, name: str) -> str:
        # "Has no method" is misleading when the name is bound some other way.
        if name in self.methods:
            return f"; {name!r} is a method there"
        if name in self.attributes:
            value = self.attributes[name].value
            return f"; {name!r} is a class attribute there" + (f" = {value}" if value else "")
        if name in self.classes:
            return f"; {name!r} is a nested class there"
        return ""

    def all_functions(self) -> Iterator[Function]:
        yield from self.methods.values()
        for nested in self.classes.values():
            yield from nested.all_functions()


@dataclass(frozen=True, slots=True)
class Import:
    """One name a module-level import binds."""

    name: str  # the local binding: "np" for ``import numpy as np``, "os" for ``import os.path``
    module: str | None  # ``from`` module as written ("..utils"); None for a plain ``import``
    imported: str | None  # the name as imported: "y" for ``from x import y as z``, "os.path"
    line: int


@dataclass(frozen=True, slots=True)
class Module:
    path: str
    origin: str
    sha256: str  # of the source bytes (UTF-8 encoding when given text)
    python: str  # the Python that built this summary, e.g. "3.11"
    classes: dict[str, Class]
    functions: dict[str, Function]
    assignments: dict[str, Assignment]  # bound name -> last module-level assignment
    imports: dict[str, Import]

    @property
    def where(self) -> str:
        return _where(self.path, self.origin)

    def has_class(self, name: str) -> bool:
        return name in self.classes

    def has_function(self, name: str) -> bool:
        return name in self.functions

    def defines(self, name: str) -> bool:
        """Bound at module level: class, function, assignment target or import."""
        return (
            name in self.classes
            or name in self.functions
            or name in self.assignments
            or name in self.imports
        )

    def cls(self, name: str) -> Class:
        try:
            return self.classes[name]
        except KeyError:
            raise Drift(
                f"class {name!r} not found in {self.where}; classes defined there: "
                f"{_listing(name, self.classes)}{self._other_kind(name)}",
                subject=Subject(self.path, name),
            ) from None

    def function(self, name: str) -> Function:
        try:
            return self.functions[name]
        except KeyError:
            raise Drift(
                f"function {name!r} not found in {self.where}; functions defined there: "
                f"{_listing(name, self.functions)}{self._other_kind(name)}",
                subject=Subject(self.path, name),
            ) from None

    def find(self, qualname: str) -> Function | Class:
        """``"Trainer.compute_loss"``, ``"Trainer"``, ``"Outer.Inner.method"`` or a
        module-level function such as ``"fixed_cross_entropy"``."""
        head, *rest = qualname.split(".")
        if not rest:
            if head in self.classes:
                return self.classes[head]
            if head in self.functions:
                return self.functions[head]
            names = {**self.classes, **self.functions}
            raise Drift(
                f"{qualname!r} not found in {self.where}: no class or function of that name; "
                f"defined there: {_listing(head, names)}{self._other_kind(head)}",
                subject=Subject(self.path, qualname),
            )
        if head not in self.classes and head in self.functions:
            raise Drift(
                f"{qualname!r}: {head!r} is a function in {self.where}, and definitions "
                "nested in functions are not indexed",
                subject=Subject(self.path, head),
            )
        found: Class = self.cls(head)
        for i, part in enumerate(rest):
            last = i == len(rest) - 1
            if last and part in found.methods:
                return found.methods[part]
            if part in found.classes:
                found = found.classes[part]
                continue
            # Report as a missing method: that is what a dotted lookup usually wants.
            return found.method(part) if last else found.cls(part)
        return found

    def all_functions(self) -> Iterator[Function]:
        """Every indexed function: module-level ones, then methods (nested classes' too)."""
        yield from self.functions.values()
        for c in self.classes.values():
            yield from c.all_functions()

    def relabeled(self, *, path: str, origin: str) -> Module:
        """The same summary naming another path/origin (a cache hit by content hash may
        come from another version of the same file)."""
        if path == self.path and origin == self.origin:
            return self
        return dataclasses.replace(
            self,
            path=path,
            origin=origin,
            classes={k: _relabel(c, path, origin) for k, c in self.classes.items()},
        )

    def _other_kind(self, name: str) -> str:
        # A symbol that moved elsewhere is usually re-imported or aliased: say so.
        if name in self.imports:
            imp = self.imports[name]
            source = f"from {imp.module} " if imp.module is not None else ""
            return f"; {name!r} is imported there ({source}import {imp.imported}, line {imp.line})"
        if name in self.classes:
            return f"; {name!r} is a class there"
        if name in self.functions:
            return f"; {name!r} is a function there"
        if name in self.assignments:
            a = self.assignments[name]
            return f"; {name!r} is assigned there ({name} = {a.value}, line {a.line})"
        return ""


def _relabel(c: Class, path: str, origin: str) -> Class:
    return dataclasses.replace(
        c,
        path=path,
        origin=origin,
        classes={k: _relabel(n, path, origin) for k, n in c.classes.items()},
    )


def _where(path: str, origin: str) -> str:
    return f"{path} ({origin})" if origin else path


def _listing(name: str, candidates: dict[str, object] | list[str]) -> str:
    names = list(candidates)
    if not names:
        return "(none)"
    close = difflib.get_close_matches(name, names, n=_LISTED, cutoff=0.5)
    chosen = set(close)
    shown = (close + sorted(n for n in names if n not in chosen))[:_LISTED]
    text = ", ".join(shown)
    if len(names) > len(shown):
        text += f", ... ({len(names) - len(shown)} more)"
    return text


# --------------------------------------------------------------------------- parsing


def parse_module(source: bytes | str, *, path: str, origin: str = "") -> Module:
    """Summarise one Python file. Raises :class:`ParseError` when the running Python cannot
    parse it (newer syntax, bad encoding, null bytes)."""
    if isinstance(source, bytes):
        raw = source
        text = _decode(raw, path, origin)
    else:
        text = source
        try:
            raw = source.encode("utf-8")
        except UnicodeEncodeError as e:
            line = text.count("\n", 0, e.start) + 1
            raise _parse_error(path, origin, line, f"not encodable as UTF-8: {e.reason}") from e
    text = text.removeprefix("\ufeff")
    try:
        tree = ast.parse(text, filename=path)
    except (SyntaxError, ValueError) as e:
        # Null bytes raise ValueError on some Pythons and a SyntaxError without a line on
        # others; find the line ourselves then.
        line = getattr(e, "lineno", None)
        nul = text.find("\0")
        if line is None and nul >= 0:
            line = text.count("\n", 0, nul) + 1
        raise _parse_error(path, origin, line, getattr(e, "msg", None) or str(e)) from e
    except (RecursionError, MemoryError) as e:
        raise _parse_error(path, origin, None, f"nested too deeply ({type(e).__name__})") from e
    return _Builder(text, path, origin).module(tree, hashlib.sha256(raw).hexdigest())


def _decode(raw: bytes, path: str, origin: str) -> str:
    # Honour PEP 263 cookies and a BOM exactly as the interpreter would.
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(raw).readline)
        return raw.decode(encoding)
    except SyntaxError as e:  # unknown or conflicting coding cookie
        raise _parse_error(path, origin, e.lineno or 1, e.msg) from e
    except UnicodeDecodeError as e:
        line = raw.count(b"\n", 0, e.start) + 1
        raise _parse_error(path, origin, line, f"cannot decode as {e.encoding}: {e.reason}") from e


def _parse_error(path: str, origin: str, line: int | None, why: str) -> ParseError:
    at = f", line {line}" if line else ""
    return ParseError(
        f"the running Python {_PYTHON} cannot parse {_where(path, origin)}{at}: {why} "
        "(if upstream adopted newer syntax, run canary under a newer Python)"
    )


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


_AUG_OPS = {
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

_DEFS = (ast.FunctionDef, ast.AsyncFunctionDef)
_TRY = (ast.Try, *((ast.TryStar,) if hasattr(ast, "TryStar") else ()))
_BLOCKS = (ast.With, ast.AsyncWith, ast.For, ast.AsyncFor, ast.While)


def _literal(node: ast.AST) -> object:
    try:
        return ast.literal_eval(node)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return NOT_LITERAL


def _literal_of_text(text: str) -> object:
    try:
        return ast.literal_eval(text)
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def _bound_names(target: ast.AST) -> Iterator[ast.AST]:
    """Leaf targets of a (possibly unpacking) assignment target."""
    if isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from _bound_names(element)
    elif isinstance(target, ast.Starred):
        yield from _bound_names(target.value)
    else:
        yield target


class _Scope:
    """Bindings collected from one block of module or class-body statements."""

    __slots__ = ("assignments", "attributes", "classes", "functions", "imports")

    def __init__(self) -> None:
        self.classes: dict[str, Class] = {}
        self.functions: dict[str, Function] = {}
        self.assignments: dict[str, Assignment] = {}
        self.attributes: dict[str, ClassAttribute] = {}
        self.imports: dict[str, Import] = {}

    def absorb(self, other: _Scope) -> None:
        self.classes.update(other.classes)
        self.functions.update(other.functions)
        self.assignments.update(other.assignments)
        self.attributes.update(other.attributes)
        self.imports.update(other.imports)


class _Builder:
    def __init__(self, text: str, path: str, origin: str) -> None:
        self.text = _Text(text)
        self.path = path
        self.origin = origin
        # Added to every line number: a function body re-parsed on its own starts at 1.
        self.line_offset = 0

    # -- text

    def span(self, node: ast.AST) -> tuple[int, int, int, int]:
        first, last = node.lineno - 1 + self.line_offset, node.end_lineno - 1 + self.line_offset
        return (first, node.col_offset, last, node.end_col_offset)

    @staticmethod
    def block_span(
        node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef,
    ) -> tuple[int, int, int, int]:
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

    # -- module and class bodies

    def module(self, tree: ast.Module, sha256: str) -> Module:
        scope = _Scope()
        self._collect(tree.body, scope, (), "", in_class=False)
        return Module(
            path=self.path,
            origin=self.origin,
            sha256=sha256,
            python=_PYTHON,
            classes=scope.classes,
            functions=scope.functions,
            assignments=scope.assignments,
            imports=scope.imports,
        )

    def _collect(
        self,
        body: list[ast.stmt],
        scope: _Scope,
        guards: tuple[str, ...],
        prefix: str,
        *,
        in_class: bool,
    ) -> None:
        for stmt in body:
            if isinstance(stmt, _DEFS):
                if not (in_class and self._is_accessor(stmt, scope)):
                    scope.functions[stmt.name] = self._function(stmt, prefix)
            elif isinstance(stmt, ast.ClassDef):
                scope.classes[stmt.name] = self._class(stmt, prefix)
            elif isinstance(stmt, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
                self._binding(stmt, scope, guards, in_class=in_class)
            elif isinstance(stmt, (ast.Import, ast.ImportFrom)):
                self._import(stmt, scope)
            else:
                self._collect_compound(stmt, scope, guards, prefix, in_class=in_class)

    def _collect_compound(
        self,
        stmt: ast.stmt,
        scope: _Scope,
        guards: tuple[str, ...],
        prefix: str,
        *,
        in_class: bool,
    ) -> None:
        """Bindings inside an if/try/with/loop/match block at module or class-body level."""
        if isinstance(stmt, ast.If):
            test = self.unparse(stmt.test)
            primary, alternative = _Scope(), _Scope()
            self._collect(stmt.body, primary, (*guards, test), prefix, in_class=in_class)
            self._collect(
                stmt.orelse, alternative, (*guards, f"not ({test})"), prefix, in_class=in_class
            )
            scope.absorb(alternative)
            scope.absorb(primary)
        elif isinstance(stmt, _TRY):
            primary, alternative = _Scope(), _Scope()
            for handler in stmt.handlers:
                self._collect(handler.body, alternative, guards, prefix, in_class=in_class)
            self._collect(stmt.body, primary, guards, prefix, in_class=in_class)
            self._collect(stmt.orelse, primary, guards, prefix, in_class=in_class)
            scope.absorb(alternative)
            scope.absorb(primary)
            self._collect(stmt.finalbody, scope, guards, prefix, in_class=in_class)
        elif isinstance(stmt, _BLOCKS):
            self._collect(stmt.body, scope, guards, prefix, in_class=in_class)
            self._collect(getattr(stmt, "orelse", []), scope, guards, prefix, in_class=in_class)
        elif isinstance(stmt, ast.Match):
            # Cases are alternatives; the first one wins, like if/elif.
            cases = [_Scope() for _ in stmt.cases]
            for case, case_scope in zip(stmt.cases, cases, strict=True):
                self._collect(case.body, case_scope, guards, prefix, in_class=in_class)
            for case_scope in reversed(cases):
                scope.absorb(case_scope)

    @staticmethod
    def _is_accessor(node: ast.FunctionDef | ast.AsyncFunctionDef, scope: _Scope) -> bool:
        # ``@x.setter def x`` would otherwise replace the property getter, which is the
        # definition checks care about.
        if node.name not in scope.functions:
            return False
        accessors = {f"{node.name}.setter", f"{node.name}.deleter", f"{node.name}.getter"}
        return any(
            isinstance(d, ast.Attribute) and ast.unparse(d) in accessors
            for d in node.decorator_list
        )

    def _binding(
        self,
        stmt: ast.Assign | ast.AugAssign | ast.AnnAssign,
        scope: _Scope,
        guards: tuple[str, ...],
        *,
        in_class: bool,
    ) -> None:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
        names = [leaf.id for t in targets for leaf in _bound_names(t) if isinstance(leaf, ast.Name)]
        if not names:
            return  # ``obj.attr = ...`` / ``d[k] = ...`` bind no module or class name
        if in_class:
            annotation = None
            if isinstance(stmt, ast.AnnAssign):
                annotation = self.unparse(stmt.annotation)
                if stmt.value is None:
                    for name in names:
                        scope.attributes.setdefault(
                            name,
                            ClassAttribute(name, None, NOT_LITERAL, stmt.lineno, annotation),
                        )
                    return
            elif isinstance(stmt, ast.AugAssign):
                return
            value = self.unparse(stmt.value)
            literal = _literal(stmt.value)
            for name in names:
                scope.attributes[name] = ClassAttribute(
                    name, value, literal, stmt.lineno, annotation
                )
            return
        assignment = self._assignment(stmt, guards)
        if assignment is not None:
            for name in names:
                scope.assignments[name] = assignment

    def _assignment(
        self,
        stmt: ast.Assign | ast.AugAssign | ast.AnnAssign | ast.NamedExpr,
        guards: tuple[str, ...],
    ) -> Assignment | None:
        if isinstance(stmt, ast.Assign):
            targets, op = stmt.targets, None
        elif isinstance(stmt, ast.AugAssign):
            targets, op = [stmt.target], _AUG_OPS[type(stmt.op)]
        elif isinstance(stmt, ast.NamedExpr):
            targets, op = [stmt.target], ":="
        elif stmt.value is None:
            return None  # a bare annotation assigns nothing
        else:
            targets, op = [stmt.target], None
        unpacked = tuple(
            self.unparse(leaf)
            for t in targets
            if isinstance(t, (ast.Tuple, ast.List))
            for leaf in _bound_names(t)
        )
        return Assignment(
            targets=tuple(self.unparse(t) for t in targets),
            op=op,
            value=self.unparse(stmt.value),
            literal=_literal(stmt.value),
            line=stmt.lineno + self.line_offset,
            guards=guards,
            unpacked=unpacked,
        )

    @staticmethod
    def _import(stmt: ast.Import | ast.ImportFrom, scope: _Scope) -> None:
        if isinstance(stmt, ast.Import):
            for alias in stmt.names:
                # ``import a.b`` binds ``a``; ``import a.b as c`` binds ``c``.
                bound = alias.asname or alias.name.split(".", 1)[0]
                scope.imports[bound] = Import(bound, None, alias.name, stmt.lineno)
            return
        module = "." * stmt.level + (stmt.module or "")
        for alias in stmt.names:
            if alias.name == "*":
                continue  # binds names we cannot know without importing
            bound = alias.asname or alias.name
            scope.imports[bound] = Import(bound, module, alias.name, stmt.lineno)

    def _class(self, node: ast.ClassDef, prefix: str) -> Class:
        qualname = prefix + node.name
        scope = _Scope()
        self._collect(node.body, scope, (), qualname + ".", in_class=True)
        return Class(
            name=node.name,
            qualname=qualname,
            bases=tuple(self.unparse(b) for b in node.bases),
            decorators=tuple(self.unparse(d) for d in node.decorator_list),
            line=node.lineno,
            end_line=node.end_lineno,
            _text=self.text,
            _span=self.block_span(node),
            attributes=scope.attributes,
            methods=scope.functions,
            classes=scope.classes,
            path=self.path,
            origin=self.origin,
        )

    # -- functions

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef, prefix: str) -> Function:
        return Function(
            name=node.name,
            qualname=prefix + node.name,
            signature=self._signature(node.args),
            decorators=tuple(self.unparse(d) for d in node.decorator_list),
            is_async=isinstance(node, ast.AsyncFunctionDef),
            line=node.lineno,
            end_line=node.end_lineno,
            _text=self.text,
            _span=self.block_span(node),
        )

    def _signature(self, args: ast.arguments) -> Signature:
        def annotation(arg: ast.arg) -> str | None:
            return self.unparse(arg.annotation) if arg.annotation is not None else None

        params: list[Param] = []
        positional = [*args.posonlyargs, *args.args]
        defaults: list[ast.expr | None] = [None] * (len(positional) - len(args.defaults))
        defaults += args.defaults
        for i, (arg, default) in enumerate(zip(positional, defaults, strict=True)):
            kind = POSITIONAL_ONLY if i < len(args.posonlyargs) else POSITIONAL_OR_KEYWORD
            text = self.unparse(default) if default is not None else None
            params.append(Param(arg.arg, kind, text, annotation(arg)))
        if args.vararg is not None:
            params.append(Param(args.vararg.arg, VAR_POSITIONAL, None, annotation(args.vararg)))
        for arg, default in zip(args.kwonlyargs, args.kw_defaults, strict=True):
            text = self.unparse(default) if default is not None else None
            params.append(Param(arg.arg, KEYWORD_ONLY, text, annotation(arg)))
        if args.kwarg is not None:
            params.append(Param(args.kwarg.arg, VAR_KEYWORD, None, annotation(args.kwarg)))
        return Signature(tuple(params))

    def _walk(
        self, body: list[ast.stmt]
    ) -> tuple[tuple[Call, ...], tuple[Assignment, ...], tuple[str, ...], frozenset[str]]:
        """One iterative pass over a function's own body.

        Iterative rather than a recursive NodeVisitor: no recursion-limit trouble on deeply
        nested expressions, and no per-node method dispatch. Parents are visited before
        their children, so the sequence number breaks ties between calls that start at the
        same position (``a.b().c()``) outer-first.
        """
        calls: list[tuple[int, int, int, Call]] = []
        assignments: list[tuple[int, int, int, Assignment]] = []
        returns: list[tuple[int, int, int, str]] = []
        names: set[str] = set()
        stack: list[tuple[ast.AST, tuple[str, ...]]] = [(s, ()) for s in reversed(body)]
        seq = 0
        while stack:
            node, guards = stack.pop()
            seq += 1
            kind = type(node)
            if kind is ast.Name:
                names.add(node.id)
                continue
            if kind is ast.Attribute:
                names.add(node.attr)
                stack.append((node.value, guards))
                continue
            if kind is ast.Call:
                calls.append((node.lineno, node.col_offset, seq, self._call(node, guards)))
            elif kind is ast.If or kind is ast.IfExp:
                test = self.unparse(node.test)
                negated = (*guards, f"not ({test})")
                orelse = node.orelse if kind is ast.If else [node.orelse]
                stack.extend((child, negated) for child in reversed(orelse))
                guarded = (*guards, test)
                body_nodes = node.body if kind is ast.If else [node.body]
                stack.extend((child, guarded) for child in reversed(body_nodes))
                stack.append((node.test, guards))
                continue
            elif kind in _NESTED_SCOPES:
                # Only what the enclosing body evaluates: decorators, defaults, bases.
                stack.extend((child, guards) for child in _evaluated_outside(node))
                continue
            elif kind in _ASSIGNMENTS:
                assignment = self._assignment(node, guards)
                if assignment is not None:
                    assignments.append((node.lineno, node.col_offset, seq, assignment))
            elif kind is ast.Return and node.value is not None:
                returns.append((node.lineno, node.col_offset, seq, self.unparse(node.value)))
            for name in node._fields:
                value = getattr(node, name, None)
                if type(value) is list:
                    stack.extend((item, guards) for item in reversed(value) if _is_node(item))
                elif value is not None and _is_node(value):
                    stack.append((value, guards))
        calls.sort(key=_position)
        assignments.sort(key=_position)
        returns.sort(key=_position)
        return (
            tuple(c[3] for c in calls),
            tuple(a[3] for a in assignments),
            tuple(r[3] for r in returns),
            frozenset(names),
        )

    def _call(self, node: ast.Call, guards: tuple[str, ...]) -> Call:
        func = node.func
        if isinstance(func, ast.Name):
            name = func.id
        elif isinstance(func, ast.Attribute):
            name = func.attr
        else:
            name = None
        return Call(
            func=self.unparse(func),
            args=tuple(self.unparse(a) for a in node.args),
            keywords=tuple((k.arg, self.unparse(k.value)) for k in node.keywords),
            line=node.lineno + self.line_offset,
            guards=guards,
            _text=self.text,
            _span=self.span(node),
            name=name,
        )


_NESTED_SCOPES = frozenset({ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef})
_ASSIGNMENTS = frozenset({ast.Assign, ast.AugAssign, ast.AnnAssign, ast.NamedExpr})


def _is_node(value: object) -> bool:
    # Expression contexts (Load/Store/Del) are shared singletons with nothing inside.
    return isinstance(value, ast.AST) and not isinstance(value, ast.expr_context)


def _position(entry: tuple) -> tuple:
    return entry[:3]


def _evaluated_outside(node: ast.AST) -> list[ast.AST]:
    if isinstance(node, ast.ClassDef):
        return [*node.decorator_list, *node.bases, *(k.value for k in node.keywords)]
    defaults = [*node.args.defaults, *(d for d in node.args.kw_defaults if d is not None)]
    if isinstance(node, ast.Lambda):
        return defaults
    return [*node.decorator_list, *defaults]


def _walk_function(text: _Text, span: tuple[int, int, int, int]) -> tuple:
    """A function's body summary, from its own text: its block re-parsed on its own, line
    numbers shifted back to the file's. Columns are unchanged (the lines are the file's),
    so spans still index the whole file's text."""
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
    builder = _Builder.__new__(_Builder)
    builder.text = text
    builder.path = builder.origin = ""
    builder.line_offset = first - 1 if indented else first
    return builder._walk(node.body)
