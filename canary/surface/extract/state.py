"""The walker's state: where the walk stands in a file (its scope, the releases and guards of
the branch, the function it is in), and how a change of it is scoped to one block."""

from __future__ import annotations

import ast
import itertools
from typing import Any

from canary.surface import callers, guards, importers
from canary.surface.extract.domains import NOTHING_KNOWN, Narrowing
from canary.surface.extract.project import Project
from canary.surface.extract.scopes import Branch, Scope
from canary.surface.extract.uses import Use


class WalkState:
    """Where the walk stands. A change that holds for a block, branch, function or
    expression is made with :meth:`entered`, or announced with :meth:`restored` where the
    block makes it as it goes; leaving the ``with`` puts it back, however it is left."""

    def __init__(self, project: Project, path: str, *, emit: bool) -> None:
        self.project = project
        self.path = path
        self.module = project.module_of[path]
        self.is_package = path.endswith("__init__.py")
        self.emit = emit  # uses are recorded (False: a pass that only reads bindings)
        # what the walk found: uses, and imports of project modules
        self.uses: list[Use] = []
        self.loads: list[importers.Load] = []
        self.mentions: list[callers.Mention] = []  # where it names the project's functions
        self.strings: set[str] = set()  # dotted project names it spells as string literals
        self.module_scope = Scope()
        self.scope = self.module_scope
        self.upstream_stars: list[str] = []  # the module's `from <upstream> import *`
        self.annotating = False  # in a type hint: postponed annotations are never evaluated
        self.guarded = 0
        self.window = guards.EVERY_RELEASE  # the releases the current branch runs on
        # the tests of an if/elif chain before the elif walked next, all false there
        self.failed: tuple[ast.expr, ...] = ()
        self.present: frozenset[str] = frozenset()
        # what the tests around say about the strings the function's single-valued names are
        self.narrowing: Narrowing = NOTHING_KNOWN
        self.single_valued: dict[int, frozenset[str]] = {}  # per function node, when asked
        self.conditional = 0  # branches entered within the current scope
        self.branch: Branch = ()  # the branch walked (scopes.Alternative says why)
        self.branches = itertools.count(1)
        self.function = 0
        self.summarising = False
        # applying a function to a source (Project.apply): only its anchors are recorded
        # (its other references are the plain walk's); the parameter naming the method
        # that source is, and the methods the tests on it selected (None: any)
        self.applying = False
        self.depth = 0
        self.passed: set[str] = set()  # the upstream objects given to the applied function
        self.selector: str | None = None
        self.selected: frozenset[str] | None = None
        self.done_test = False  # evaluating the test of an if whose body returns
        # the function walked, whose anchor tests are read when first needed (most
        # functions never hold a source text)
        self.function_node: ast.FunctionDef | ast.AsyncFunctionDef | None = None
        self.tested = 0  # in code that runs only where an anchor a test asked about is there
        self.helper_depth = 0  # evaluating a version helper called from helpers this deep
        self.undecided = ""  # why the current branch may not run: a test not evaluated
        self.fallback_of: tuple[str, ...] = ()  # in an except ImportError of these imports
        # upstream imports this function made before, in the blocks around: where one
        # fails it raises there, so what follows in them runs only where they succeed
        self.imported: frozenset[str] = frozenset()
        self.within = ""  # the module-level function (or "C.m" static method) walked
        self.class_name = ""  # the module-level class whose body, or a method of it, is walked
        # imports (by position) whose failure a handler takes the place of: why
        self.handled: dict[tuple[int, int], str] = {}
        # the function (0: the module) whose current try body an except ImportError ends
        self.catching: int | None = None
        # the guards around that are tries whose every except ImportError raises again
        self.reraising = 0
        # the try bodies around, in the function walked, whose handlers swallow any exception
        # (fallbacks.swallows_any): a project function called there raises no further
        self.swallowing = 0
        # the callee of the last call walked: a node is a callee wherever it is walked, so
        # `called is node` needs no putting back (and calls are the walk's most frequent)
        self.called: ast.expr | None = None

    def branched(self) -> Restore:
        """For the walk of one branch of an ``if``, ``try`` or loop: a branch of its own."""
        return self.entered(branch=(*self.branch, next(self.branches)))

    def entered(self, **changes: Any) -> Restore:
        """Set each attribute of ``changes`` for the ``with`` block this is entered with;
        leaving it puts back exactly those, as they were."""
        attributes = self.__dict__  # plain attributes: a dict update is a setattr each
        saved = {name: attributes[name] for name in changes}
        attributes.update(changes)
        return Restore(attributes, saved)

    def restored(self, *names: str) -> Restore:
        """For a block that changes the attributes ``names`` as it goes (each statement
        narrowing what follows it): leaving it puts them back as they were."""
        attributes = self.__dict__
        return Restore(attributes, {name: attributes[name] for name in names})


class Restore:
    """The attributes a ``with`` block changed and their values before it (a plain class:
    one is entered for every block and many expressions, so it must cost little)."""

    __slots__ = ("attributes", "saved")

    def __init__(self, attributes: dict[str, Any], saved: dict[str, Any]) -> None:
        self.attributes = attributes
        self.saved = saved

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc_info: object) -> None:
        self.attributes.update(self.saved)
