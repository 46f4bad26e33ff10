"""What the code index records for canary.symbols: star imports, effects, import guards."""

from __future__ import annotations

import pickle
import textwrap

from canary.codeindex import INDEX_FORMAT, parse_module
from canary.symbols.effects import build, declared_all

SOURCE = textwrap.dedent(
    """
    import sys
    from typing import TYPE_CHECKING

    X = 1
    __all__ = ["a"]
    __all__ += ["b"]
    __all__.extend(["c"])
    _import_structure = {"configuration": ["Config"]}
    try:
        if not is_torch_available():
            raise OptionalDependencyNotAvailable()
    except OptionalDependencyNotAvailable:
        _import_structure["dummy"] = [n for n in dir(dummy)]
    else:
        _import_structure["modeling"] = ["Model"]
        _import_structure["configuration"].extend(["Other"])
    if TYPE_CHECKING:
        from .configuration import *
        from .modeling import Model
    else:
        sys.modules[__name__] = _LazyModule(__name__, __file__, _import_structure)
    """
)


def test_star_imports_and_import_guards_are_recorded():
    module = parse_module(SOURCE, path="pkg/__init__.py")
    assert [(s.module, s.guards) for s in module.star_imports] == [
        (".configuration", ("TYPE_CHECKING",))
    ]
    assert module.imports["Model"].guards == ("TYPE_CHECKING",)
    assert module.imports["sys"].guards == ()


def test_effects_are_in_source_order_with_handlers_marked_and_constants_left_out():
    module = parse_module(SOURCE, path="pkg/__init__.py")
    effects = [(e.target, e.op, e.fallback) for e in module.effects]
    assert effects == [
        ("__all__", "=", False),
        ("__all__", "+", False),
        ("__all__.extend", "call", False),
        ("_import_structure", "=", False),
        ("_import_structure['dummy']", "=", True),
        ("_import_structure['modeling']", "=", False),
        ("_import_structure['configuration'].extend", "call", False),
        ("sys.modules[__name__]", "=", False),
    ]
    assert module.effects[-1].guards == ("not (TYPE_CHECKING)",)
    assert module.effects[0].root == "__all__"
    # X is a plain constant: it is in the assignments, not repeated as an effect.
    assert "X" in module.assignments
    assert pickle.loads(pickle.dumps(module)).effects == module.effects


def test_containers_built_in_steps_evaluate_and_handlers_are_left_out():
    module = parse_module(SOURCE, path="pkg/__init__.py")
    assert declared_all(module).value == ("a", "b", "c")
    built = build(module, "_import_structure")
    assert built.value == {"configuration": ["Config", "Other"], "modeling": ["Model"]}
    assert built.unevaluated == ()


def test_a_step_that_is_not_literal_is_reported_not_guessed():
    module = parse_module("__all__ = ['a']\n__all__ += names()\n", path="m.py")
    built = declared_all(module)
    assert built.unevaluated == ("__all__ += names()",)


def test_imports_in_a_class_body_are_the_class_s_own():
    source = "class Trainer:\n    from .utils import log_metrics as log\n"
    module = parse_module(source, path="pkg/trainer.py")
    assert module.classes["Trainer"].imports["log"].statement == "from .utils import log_metrics"
    assert "log" not in module.imports


def test_the_index_format_was_bumped_for_the_new_fields():
    assert INDEX_FORMAT >= 5
