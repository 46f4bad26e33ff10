"""Which statements of the running Python's ``ast`` bind names at module and class level.

The parsing layer reads module and class bodies through this table, so a statement kind a
newer Python adds (``type X = ...``, :class:`ast.TypeAlias`, from 3.12) is either recorded
as the binding it is or refused with a clear error: never read as binding nothing, which
would turn "the module binds X" into a false "does not bind". Names bound inside an
expression (``:=`` at module level, ``match`` captures) are not indexed.
"""

from __future__ import annotations

import ast
import enum


class Binds(enum.Enum):
    """What one statement binds in the body it stands in."""

    DEFINITION = "its name: a def, async def or class"
    ASSIGNMENT = "its targets: =, augmented, annotated with a value, type X = ..."
    IMPORT = "the names it imports"
    TARGETS = "its targets (for, with), then what its bodies bind"
    BLOCK = "only what its bodies bind (if, try, while, match)"
    CALL = "nothing; a call statement is a module's effect"
    NOTHING = "nothing (pass, return, raise, del, assert, global, nonlocal, break, continue)"


def _present(*names: str) -> tuple[type[ast.stmt], ...]:
    """The statement classes of ``names`` the running Python's ``ast`` has."""
    return tuple(getattr(ast, name) for name in names if hasattr(ast, name))


_TABLE: dict[Binds, tuple[type[ast.stmt], ...]] = {
    Binds.DEFINITION: (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef),
    # TypeAlias: 3.12+.
    Binds.ASSIGNMENT: (ast.Assign, ast.AugAssign, ast.AnnAssign, *_present("TypeAlias")),
    Binds.IMPORT: (ast.Import, ast.ImportFrom),
    Binds.TARGETS: (ast.For, ast.AsyncFor, ast.With, ast.AsyncWith),
    # TryStar: 3.11+.
    Binds.BLOCK: (ast.If, ast.Try, *_present("TryStar"), ast.While, ast.Match),
    Binds.CALL: (ast.Expr,),
    Binds.NOTHING: (
        ast.Pass,
        ast.Return,
        ast.Raise,
        ast.Delete,
        ast.Assert,
        ast.Global,
        ast.Nonlocal,
        ast.Break,
        ast.Continue,
    ),
}

#: Every statement class of the running Python, with what it binds.
STATEMENTS: dict[type[ast.stmt], Binds] = {
    kind: binds for binds, kinds in _TABLE.items() for kind in kinds
}


def binds(stmt: ast.stmt) -> Binds | None:
    """What ``stmt`` binds; None for a statement kind this table does not know (a Python
    newer than canary): the caller refuses the file rather than guess."""
    return STATEMENTS.get(type(stmt))
