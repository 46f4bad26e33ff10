"""What a module says about the names its expressions use (canary.codeindex.equivalence
``module_context``), read from its module-level lines: import aliases, and the signatures of
its undecorated functions and of methods its classes agree on."""

from __future__ import annotations

import textwrap

from canary.codeindex.equivalence import Callee, module_context
from canary.codeindex.expressions import SourceText

SOURCE = textwrap.dedent(
    """
    import inspect as inspect_mm, os
    import numpy as np  # comment
    import torch.nn as tnn
    import json
    from typing import Any as Whatever

    def plain(a, b=1, *, c=2):
        pass

    def multi_line(
        a,
        b: "dict[str, int]" = None,
        /,
        c=3,
    ) -> int:
        return a

    @decorated
    def wrapped(a, b):
        pass

    @decorated(
        "arg",
    )
    def wrapped_long(a, b):
        pass

    def outer(x):
        def inner(self, y):
            return y
        return inner

    class A:
        def same(self, x, y=None):
            pass

        def differs(self, x):
            pass

        @staticmethod
        def static(x):
            pass

    class B:
        def same(self, x, y=None):
            pass

        def differs(self, y):
            pass

    np = None
    """
)


def test_aliases_are_module_level_import_as_lines_not_rebound():
    context = module_context(SourceText(SOURCE))
    assert dict(context.aliases) == {"inspect_mm": "inspect", "tnn": "torch.nn"}


def test_signatures_of_undecorated_functions_and_agreeing_methods():
    callees = module_context(SourceText(SOURCE)).callees
    assert callees.get("plain") == Callee(("a", "b"), 0)
    assert callees.get("multi_line") == Callee(("a", "b", "c"), 2)
    assert callees.get("wrapped") is None
    assert callees.get("wrapped_long") is None
    assert callees.get("self.same") == Callee(("x", "y"), 0)
    assert callees.get("self.differs") is None  # two classes, two signatures
    assert callees.get("self.static") is None  # decorated: no self
    assert callees.get("self.inner") is None  # a nested function is no method
