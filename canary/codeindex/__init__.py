"""A stdlib-``ast`` summary of one upstream Python file, in one-way layers.

:func:`parse_module` reads a file's text (never importing it) and returns a :class:`Module`:
its classes, functions, methods, signatures, decorators, class attributes, module-level
assignments and imports, and for every function the calls, assignments and returns in its
body. The summary pickles compactly; the cache stores it by content hash and a warm run
unpickles it instead of parsing.

The layers import one way only, ``parse -> model -> flow -> (body, equivalence) ->
expressions``:

* :mod:`~canary.codeindex.parse`: the visitor, from a file's text to a :class:`Module`;
* :mod:`~canary.codeindex.model`: :class:`Module`, :class:`Class`, :class:`Function`,
  :class:`Signature` and the lookups that raise :class:`~canary.errors.Drift`;
* :mod:`~canary.codeindex.flow`: a function's data flow, on first use too: each local's
  bindings, what reaches each call and return, and the path conditions of its returns;
* :mod:`~canary.codeindex.body`: a function body's calls, assignments, guards and returns,
  built on first use from the function's own text (a parse indexes only what every check
  may ask of a file, which made parsing 2.4x faster and the pickled summaries 2.5x smaller);
* :mod:`~canary.codeindex.equivalence`: when two normalised expressions do the same
  (``and``/``or`` operands reordered, a local renamed), beside the body layer;
* :mod:`~canary.codeindex.expressions`: the shared file text and normalised expressions.

Two kinds of text are kept, on purpose: ``source`` fields (of :class:`Function`,
:class:`Class` and :class:`Call`) are the exact text of the file, for showing to people and
for the rare genuinely textual check; every expression a check compares (callees, args,
assignment targets and values, guards, returns, bases, decorators, defaults, annotations)
is normalised with :func:`ast.unparse`, so an upstream reformat is not drift.

Cache keys must include :data:`INDEX_KEY` (the summary shape *and* the Python minor
version, because ``ast.unparse`` output is not guaranteed stable across Python releases).
A summary looked up by content hash alone may have been built for another version of the
same file; :meth:`Module.relabeled` gives it the path and origin its messages should name.
"""

from __future__ import annotations

from canary.codeindex.body import Assignment, Body, Call
from canary.codeindex.equivalence import (
    MODULE_SCOPE,
    Scope,
    equivalent,
    holds_under,
    renaming,
)
from canary.codeindex.expressions import NOT_LITERAL, PYTHON, normalised_text
from canary.codeindex.flow import Binding, Flow, Return
from canary.codeindex.model import (
    KEYWORD_ONLY,
    POSITIONAL_ONLY,
    POSITIONAL_OR_KEYWORD,
    VAR_KEYWORD,
    VAR_POSITIONAL,
    Class,
    ClassAttribute,
    Effect,
    Function,
    Import,
    Module,
    Param,
    Signature,
)
from canary.codeindex.parse import parse_module

__all__ = [
    "INDEX_FORMAT",
    "INDEX_KEY",
    "KEYWORD_ONLY",
    "MODULE_SCOPE",
    "NOT_LITERAL",
    "POSITIONAL_ONLY",
    "POSITIONAL_OR_KEYWORD",
    "VAR_KEYWORD",
    "VAR_POSITIONAL",
    "Assignment",
    "Binding",
    "Body",
    "Call",
    "Class",
    "ClassAttribute",
    "Effect",
    "Flow",
    "Function",
    "Import",
    "Module",
    "Param",
    "Return",
    "Scope",
    "Signature",
    "equivalent",
    "holds_under",
    "normalised_text",
    "parse_module",
    "renaming",
]

#: Bump whenever the shape or meaning of the summary changes; part of every cache key.
#: 3: the summary types moved into the canary.codeindex package (pickles name the classes).
#: 4: star imports, module-level effects and import guards (canary.symbols reads them).
#: 5: imports in a class body (Class.imports).
#: 6: type aliases (3.12+) and module-level for/with targets are bindings.
#: 7: names functions declare ``global`` (Module.run_time_globals).
INDEX_FORMAT = 7

#: The non-content part of a cache key: summary format and the Python that built it.
INDEX_KEY = f"codeindex-v{INDEX_FORMAT}-py{PYTHON}"
