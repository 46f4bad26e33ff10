"""Unit tests of canary.codeindex: offline, on inline snippets."""

from __future__ import annotations

import ast
import hashlib
import pickle
import sys
import textwrap

import pytest

from canary import codeindex
from canary.codeindex import (
    INDEX_FORMAT,
    INDEX_KEY,
    NOT_LITERAL,
    Class,
    Function,
    Module,
    parse_module,
)
from canary.errors import Drift, InfrastructureError, ParseError

PATH = "transformers/trainer.py"
ORIGIN = "transformers 5.5.4"


def parse(code: str, *, path: str = PATH, origin: str = ORIGIN) -> Module:
    return parse_module(textwrap.dedent(code), path=path, origin=origin)


def function(code: str, name: str = "f") -> Function:
    return parse(code).find(name)


# --------------------------------------------------------------------------- signatures


def test_signature_of_every_kind():
    f = function(
        """
        def f(a, b: int, /, c, d: str = "x", *args: int, e, g: float = 1.0, **kwargs) -> None:
            pass
        """
    )
    sig = f.signature
    assert sig.names == ("a", "b", "c", "d", "args", "e", "g", "kwargs")
    assert [p.kind for p in sig.params] == [
        "positional_only",
        "positional_only",
        "positional_or_keyword",
        "positional_or_keyword",
        "var_positional",
        "keyword_only",
        "keyword_only",
        "var_keyword",
    ]
    assert sig.param("d").default == "'x'"
    assert sig.param("d").annotation == "str"
    assert sig.param("a").default is None
    assert sig.param("a").annotation is None
    assert sig.param("g").default == "1.0"
    assert sig.param("args").annotation == "int"
    assert sig.param("missing") is None
    assert sig.keyword_only == ("e", "g")
    assert sig.var_positional == "args"
    assert sig.var_keyword == "kwargs"
    assert str(sig) == "(a, b, /, c, d='x', *args, e, g=1.0, **kwargs)"
    assert sig.format(annotations=True) == (
        "(a, b: int, /, c, d: str = 'x', *args: int, e, g: float = 1.0, **kwargs)"
    )


def test_signature_str_matches_message_style():
    f = function(
        """
        class Trainer:
            def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
                pass
        """,
        "Trainer.compute_loss",
    )
    assert str(f.signature) == (
        "(self, model, inputs, return_outputs=False, num_items_in_batch=None)"
    )
    assert f.signature.var_keyword is None
    assert f.signature.var_positional is None
    assert f.signature.keyword_only == ()


def test_signature_bare_star_and_only_positional_only():
    assert str(function("def f(a, *, b=2): pass").signature) == "(a, *, b=2)"
    assert str(function("def f(a, b=1, /): pass").signature) == "(a, b=1, /)"
    assert str(function("def f(): pass").signature) == "()"
    assert str(function("def f(*, k): pass").signature) == "(*, k)"


def test_has_and_accepts_keyword():
    sig = function("def f(a, /, b, *args, c, **kwargs): pass").signature
    assert sig.has("a")
    assert sig.has("kwargs")
    assert not sig.has("zzz")  # **kwargs swallowing it is not "having" it
    assert sig.accepts_keyword("zzz")  # ... but it does accept it
    assert sig.accepts_keyword("b")
    assert sig.accepts_keyword("c")

    strict = function("def f(a, /, b, *, c): pass").signature
    assert not strict.accepts_keyword("a")  # positional-only
    assert strict.accepts_keyword("b")
    assert strict.accepts_keyword("c")
    assert not strict.accepts_keyword("zzz")


def test_async_and_decorators():
    f = function(
        """
        @torch.no_grad()
        @  functools.lru_cache(maxsize = None)
        async def f(x):
            return await x
        """
    )
    assert f.is_async
    assert f.decorators == ("torch.no_grad()", "functools.lru_cache(maxsize=None)")
    assert f.source.startswith("@torch.no_grad()\n")
    assert f.source.endswith("return await x")
    assert f.line == 4  # the def line; source starts at the first decorator
    assert f.end_line == 5
    assert not function("def f(): pass").is_async


# --------------------------------------------------------------------------- classes

CLASS_CODE = """
import enum

class Base: pass

@dataclass(frozen=True)
class Trainer(Base, mixins.Thing, metaclass=Meta):
    '''Doc.'''
    accepts_loss_kwargs = True
    name: str = "trainer"
    count: int
    factory = make_factory()
    if is_torch_available():
        device = "cuda"
    try:
        import flash_attn
        backend = "flash"
    except ImportError:
        backend = None
    a = b = 3

    def __init__(self, model=None, args=None):
        super().__init__()
        self.model = model

    @property
    def tokenizer(self):
        return self._tok

    @tokenizer.setter
    def tokenizer(self, value):
        self._tok = value

    @staticmethod
    def helper(x):
        return x

    if sys.version_info >= (3, 11):
        def modern(self):
            return 1

    class Inner:
        flag = False

        def deep(self):
            return self.flag
"""


def test_class_bases_decorators_lines_source():
    module = parse(CLASS_CODE)
    trainer = module.cls("Trainer")
    assert isinstance(trainer, Class)
    assert trainer.bases == ("Base", "mixins.Thing")  # metaclass= excluded
    assert trainer.decorators == ("dataclass(frozen=True)",)
    assert trainer.qualname == "Trainer"
    assert trainer.source.startswith("@dataclass(frozen=True)\nclass Trainer(")
    assert trainer.source.rstrip().endswith("return self.flag")
    assert trainer.line == 7
    assert trainer.end_line == trainer.line + trainer.source.count("\n") - 1


def test_class_attributes_literal_annotated_conditional():
    trainer = parse(CLASS_CODE).cls("Trainer")
    attrs = trainer.attributes
    assert attrs["accepts_loss_kwargs"].literal is True
    assert attrs["accepts_loss_kwargs"].value == "True"
    assert attrs["name"].annotation == "str"
    assert attrs["name"].literal == "trainer"
    assert attrs["name"].value == "'trainer'"
    assert attrs["count"].value is None  # bare annotation: declared, no value
    assert attrs["count"].annotation == "int"
    assert attrs["count"].literal is NOT_LITERAL
    assert attrs["factory"].literal is NOT_LITERAL
    assert attrs["factory"].value == "make_factory()"
    assert attrs["device"].literal == "cuda"  # inside a class-level if
    assert attrs["backend"].literal == "flash"  # the try body beats its except handler
    assert attrs["a"].literal == 3
    assert attrs["b"].literal == 3
    assert "flash_attn" not in attrs  # imports are not attributes
    assert trainer.attribute("accepts_loss_kwargs").line == 9


def test_class_methods_properties_nested():
    trainer = parse(CLASS_CODE).cls("Trainer")
    assert list(trainer.methods) == ["__init__", "tokenizer", "helper", "modern"]
    # The setter does not replace the property getter.
    assert trainer.method("tokenizer").decorators == ("property",)
    assert trainer.method("tokenizer").returns == ("self._tok",)
    assert trainer.method("helper").decorators == ("staticmethod",)
    assert trainer.method("__init__").qualname == "Trainer.__init__"
    assert trainer.has_method("modern")  # defined under a class-level if
    assert not trainer.has_method("deep")
    inner = trainer.classes["Inner"]
    assert inner.qualname == "Trainer.Inner"
    assert inner.method("deep").qualname == "Trainer.Inner.deep"
    assert inner.attribute("flag").literal is False
    assert trainer.cls("Inner") is inner


def test_declares_is_own_body_only():
    module = parse(CLASS_CODE)
    trainer = module.cls("Trainer")
    for name in ("accepts_loss_kwargs", "count", "tokenizer", "Inner", "device"):
        assert trainer.declares(name), name
    assert not trainer.declares("deep")
    assert not trainer.declares("flag")
    assert not module.cls("Base").declares("accepts_loss_kwargs")


def test_method_source_keeps_file_indentation():
    method = parse(CLASS_CODE).find("Trainer.__init__")
    assert method.source == (
        "    def __init__(self, model=None, args=None):\n"
        "        super().__init__()\n"
        "        self.model = model"
    )


def test_class_drift_messages():
    module = parse(CLASS_CODE)
    trainer = module.cls("Trainer")
    with pytest.raises(Drift) as err:
        trainer.method("tokenize")
    msg = str(err.value)
    assert msg.startswith(f"Trainer.tokenize: class Trainer in {PATH} ({ORIGIN}) has no method")
    assert "'tokenize'; it has: tokenizer" in msg  # closest first
    assert "__init__" in msg
    assert "helper" in msg

    with pytest.raises(Drift, match=r"'factory' is a class attribute there = make_factory\(\)"):
        trainer.method("factory")
    with pytest.raises(Drift, match=r"has no class attribute 'tokenizer'.*is a method there"):
        trainer.attribute("tokenizer")
    with pytest.raises(Drift, match=r"Trainer\.Outer: class Trainer .* no nested class"):
        trainer.cls("Outer")


# --------------------------------------------------------------------------- calls

CALLS_CODE = """
def f(self, model, inputs, items):
    unwrapped_model = self.accelerator.unwrap_model(model)
    if hasattr(unwrapped_model, "accepts_loss_kwargs"):
        self.model_accepts_loss_kwargs = unwrapped_model.accepts_loss_kwargs
    for batch in loader(inputs):
        with ctx(batch) as c:
            try:
                step(c, *items, scale=2, **opts)
            except ValueError:
                recover()
            finally:
                cleanup()
    total = sum([weigh(x) for x in items if keep(x)])
    value = {k: conv(v) for k, v in items}
    a = b.c(d).e(f)

    def nested(y=default_of_nested()):
        inside_nested()

    @decorate_nested()
    class Local(base_of_local()):
        inside_class_body()

    handler = lambda z=default_of_lambda(): inside_lambda(z)
    return self.accelerator.backward(total)
"""


def test_calls_in_source_order_including_nested_blocks():
    f = function(CALLS_CODE)
    assert [c.func for c in f.calls] == [
        "self.accelerator.unwrap_model",
        "hasattr",
        "loader",
        "ctx",
        "step",
        "recover",
        "cleanup",
        "sum",
        "weigh",
        "keep",
        "conv",
        "b.c(d).e",  # outer call first when two start at the same position
        "b.c",
        "default_of_nested",
        "decorate_nested",
        "base_of_local",
        "default_of_lambda",
        "self.accelerator.backward",
    ]
    bodies = {"inside_nested", "inside_class_body", "inside_lambda"}
    assert not bodies & {c.func for c in f.calls}
    assert not bodies & f.names
    assert f.returns == ("self.accelerator.backward(total)",)


def test_hasattr_call_with_args():
    f = function(CALLS_CODE)
    (call,) = f.calls_to("hasattr")
    assert call.args == ("unwrapped_model", "'accepts_loss_kwargs'")
    assert call.literal_args == (None, "accepts_loss_kwargs")
    assert call.arg(1) == "'accepts_loss_kwargs'"
    assert call.arg(2) is None
    assert call.source == 'hasattr(unwrapped_model, "accepts_loss_kwargs")'
    assert call.line == 4
    assert call.guards == ()
    assert call.name == "hasattr"


def test_call_args_keywords_and_starred():
    f = function(CALLS_CODE)
    (call,) = f.calls_to("step")
    assert call.args == ("c", "*items")
    assert call.keywords == (("scale", "2"), (None, "opts"))
    assert call.keyword("scale") == "2"
    assert call.keyword("missing") is None
    assert call.literal_args == (None, None)


def test_calls_named_matches_last_component():
    f = function(CALLS_CODE)
    assert [c.func for c in f.calls_named("backward")] == ["self.accelerator.backward"]
    assert f.calls_to("backward") == ()
    assert [c.func for c in f.calls_named("e")] == ["b.c(d).e"]
    assert function("def f(): super().__init__(x=1)").calls_named("__init__")[0].func == (
        "super().__init__"
    )


def test_names_cover_names_and_attributes():
    f = function(CALLS_CODE)
    for name in ("unwrapped_model", "accepts_loss_kwargs", "model_accepts_loss_kwargs", "self"):
        assert f.mentions(name), name
    assert "accelerator" in f.names
    assert "unwrap_model" in f.names
    assert not f.mentions("z")  # the lambda's parameter lives in the lambda body


# --------------------------------------------------------------------------- guards

GUARDS_CODE = """
def f(x, y):
    if x > 0:
        one()
        if y:
            two()
        else:
            three()
    elif x < 0:
        four()
    else:
        five()
        total = 1
    while check():
        if flag:
            total += 2
    return six() if x else seven()
"""


def test_call_guards_if_elif_else_nested():
    calls = {c.func: c.guards for c in function(GUARDS_CODE).calls}
    assert calls["one"] == ("x > 0",)
    assert calls["two"] == ("x > 0", "y")
    assert calls["three"] == ("x > 0", "not (y)")
    assert calls["four"] == ("not (x > 0)", "x < 0")
    assert calls["five"] == ("not (x > 0)", "not (x < 0)")
    assert calls["check"] == ()  # a loop condition is not a guard
    assert calls["six"] == ("x",)  # conditional expressions guard too
    assert calls["seven"] == ("not (x)",)


def test_assignment_guards():
    f = function(GUARDS_CODE)
    first, second = f.assignments_to("total")
    assert first.guards == ("not (x > 0)", "not (x < 0)")
    assert first.op is None
    assert first.literal == 1
    assert second.guards == ("flag",)
    assert second.op == "+"
    assert second.literal == 2


def test_training_step_guard():
    trainer = parse(
        """
        class Trainer:
            def training_step(self, model, inputs, num_items_in_batch=None):
                model.train()
                inputs = self._prepare_inputs(inputs)
                with self.compute_loss_context_manager():
                    loss = self.compute_loss(model, inputs, num_items_in_batch=num_items_in_batch)
                del inputs
                if self.args.n_gpu > 1:
                    loss = loss.mean()
                if (
                    not self.model_accepts_loss_kwargs or num_items_in_batch is None
                ) and self.compute_loss_func is None:
                    loss = loss / self.args.gradient_accumulation_steps
                self.accelerator.backward(loss, **kwargs)
                return loss.detach()
        """
    ).cls("Trainer")
    step = trainer.method("training_step")
    scaled = [a for a in step.assignments_to("loss") if a.value.startswith("loss /")]
    assert len(scaled) == 1
    assert scaled[0].value == "loss / self.args.gradient_accumulation_steps"
    assert scaled[0].guards == (
        "(not self.model_accepts_loss_kwargs or num_items_in_batch is None)"
        " and self.compute_loss_func is None",
    )
    assert scaled[0].literal is NOT_LITERAL
    (compute,) = step.calls_to("self.compute_loss")
    assert compute.keyword("num_items_in_batch") == "num_items_in_batch"
    (backward,) = step.calls_to("self.accelerator.backward")
    assert backward.keywords == ((None, "kwargs"),)
    assert backward.guards == ()
    assert step.returns == ("loss.detach()",)


# --------------------------------------------------------------------------- assignments


def test_assignment_kinds():
    f = function(
        """
        def f(self):
            a = b = [1, 2]
            self.model_accepts_loss_kwargs = False
            loss /= 2
            n: int = 3
            m: int
            loss, (out, *rest) = compute()
            if (k := lookup()) is not None:
                pass
        """
    )
    chain = f.assignments_to("a")[0]
    assert chain.targets == ("a", "b")
    assert chain.literal == [1, 2]
    assert f.assignments_to("b") == (chain,)
    flag = f.assignments_to("self.model_accepts_loss_kwargs")[0]
    assert flag.literal is False
    assert flag.value == "False"
    div = f.assignments_to("loss")[0]
    assert div.op == "/"
    assert div.value == "2"
    assert f.assignments_to("n")[0].literal == 3
    assert f.assignments_to("m") == ()  # a bare annotation assigns nothing
    unpack = f.assignments_to("loss")[1]
    assert unpack.targets == ("(loss, (out, *rest))",)
    assert unpack.unpacked == ("loss", "out", "rest")
    assert f.assignments_to("rest") == (unpack,)
    walrus = f.assignments_to("k")[0]
    assert walrus.op == ":="
    assert walrus.value == "lookup()"
    assert [a.line for a in f.assignments] == [3, 4, 5, 6, 8, 9]


# --------------------------------------------------------------------------- reformatting

GUARD = (
    "(not self.model_accepts_loss_kwargs or num_items_in_batch is None)"
    " and self.compute_loss_func is None"
)
ORIGINAL = f"""
def f(self, model, num_items_in_batch=None):
    if {GUARD}:
        loss = loss / self.args.gradient_accumulation_steps
    outputs = model(**inputs, labels=inputs["labels"], return_dict=True)
    return hasattr(model, "accepts_loss_kwargs")
"""

REFORMATTED = """
def f(
    self,
    model,
    num_items_in_batch = None,
):
    if (
        (
            not self.model_accepts_loss_kwargs
            or num_items_in_batch is None
        )
        and self.compute_loss_func is None
    ):
        loss = (
            loss
            / self.args.gradient_accumulation_steps
        )
    outputs = model(
        **inputs,
        labels=inputs['labels'],
        return_dict=True,
    )
    return hasattr(
        model, 'accepts_loss_kwargs'
    )
"""


def _shape(f: Function) -> tuple:
    return (
        str(f.signature),
        [(c.func, c.args, c.keywords, c.guards) for c in f.calls],
        [(a.targets, a.op, a.value, a.literal, a.guards) for a in f.assignments],
        f.returns,
        f.names,
    )


def test_reformatting_is_not_drift():
    before, after = function(ORIGINAL), function(REFORMATTED)
    assert _shape(before) == _shape(after)
    assert before.assignments[0].guards == (GUARD,)
    assert before.source != after.source  # the exact text is still the file's


# --------------------------------------------------------------------------- module level

MODULE_CODE = """
import os
import os.path
import numpy as np
from typing import TYPE_CHECKING
from ..utils import logging as log, is_torch_available
from . import modeling_utils
from .stuff import *

logger = log.get_logger(__name__)
__all__ = ["Trainer"]
PREFIX_CHECKPOINT_DIR = "checkpoint"
x, (y, z) = 1, (2, 3)
os.environ["A"] = "1"

if TYPE_CHECKING:
    import optuna
    from .data import DataCollator

try:
    import datasets
    HAS_DATASETS = True
except ImportError:
    datasets = None
    HAS_DATASETS = False

if is_torch_available():
    import torch

    def fixed_cross_entropy(source, target, num_items_in_batch=None, ignore_index=-100):
        reduction = "sum" if num_items_in_batch is not None else "mean"
        return torch.nn.functional.cross_entropy(source, target, reduction=reduction)
else:
    def fixed_cross_entropy(*args, **kwargs):
        raise ImportError("torch")

with warnings.catch_warnings():
    class Trainer:
        def compute_loss(self, model, inputs):
            return model(**inputs)

def train(): pass
def training(): pass
def trainer_main(): pass

def helper():
    import inner_only
    NOT_MODULE_LEVEL = 1

    def nested_fn():
        pass
"""


def test_imports():
    imports = parse(MODULE_CODE).imports
    assert imports["os"].module is None
    assert imports["os"].imported == "os.path"  # ``import os.path`` also binds os
    assert imports["np"].imported == "numpy"
    assert imports["np"].module is None
    assert imports["log"].module == "..utils"
    assert imports["log"].imported == "logging"
    assert imports["is_torch_available"].imported == "is_torch_available"
    assert imports["modeling_utils"].module == "."
    assert imports["DataCollator"].module == ".data"  # inside if TYPE_CHECKING
    assert "optuna" in imports
    assert "datasets" in imports  # inside try
    assert "torch" in imports
    assert "inner_only" not in imports
    assert "*" not in imports
    assert imports["np"].line == 4


def test_an_import_is_quoted_without_its_alias():
    imports = parse(MODULE_CODE).imports
    assert imports["os"].statement == "import os.path"
    assert imports["np"].statement == "import numpy"
    assert imports["log"].statement == "from ..utils import logging"
    assert imports["modeling_utils"].statement == "from . import modeling_utils"


def test_module_assignments_and_defines():
    module = parse(MODULE_CODE)
    assigns = module.assignments
    assert assigns["PREFIX_CHECKPOINT_DIR"].literal == "checkpoint"
    assert assigns["__all__"].literal == ["Trainer"]
    assert assigns["logger"].value == "log.get_logger(__name__)"
    assert assigns["logger"].literal is NOT_LITERAL
    assert assigns["y"] is assigns["z"]
    assert assigns["x"].unpacked == ("x", "y", "z")
    # The try body beats the except handler: it is what runs with the dependency.
    assert assigns["HAS_DATASETS"].literal is True
    assert assigns["datasets"].literal is None  # only the handler assigns it
    assert "NOT_MODULE_LEVEL" not in assigns
    assert "os.environ['A']" not in assigns
    for name in ("logger", "x", "Trainer", "train", "datasets"):
        assert module.defines(name), name
        assert module.binds(name), name
    # Imports bind a name here but do not define it: the code lives elsewhere.
    for name in ("os", "DataCollator"):
        assert module.binds(name), name
        assert not module.defines(name), name
    for name in ("nested_fn", "NOT_MODULE_LEVEL"):
        assert not module.binds(name), name
        assert not module.defines(name), name


def test_module_level_conditional_definitions():
    module = parse(MODULE_CODE)
    assert module.has_class("Trainer")  # inside a with block
    fce = module.function("fixed_cross_entropy")
    # The if branch beats the else branch's stub.
    assert fce.signature.names == ("source", "target", "num_items_in_batch", "ignore_index")
    assert fce.signature.param("ignore_index").default == "-100"
    (ce,) = fce.calls_named("cross_entropy")
    assert ce.keyword("reduction") == "reduction"
    assert fce.assignments_to("reduction")[0].value == (
        "'sum' if num_items_in_batch is not None else 'mean'"
    )
    assert not module.has_function("nested_fn")
    assert module.has_function("helper")


def test_later_statement_replaces_earlier():
    module = parse(
        """
        X = 1
        if cond:
            X = 2
        def f(a): pass
        def f(b): pass
        """
    )
    assert module.assignments["X"].literal == 2
    assert module.assignments["X"].guards == ("cond",)
    assert module.function("f").signature.names == ("b",)


def test_module_assignment_guards():
    module = parse(
        """
        if TYPE_CHECKING:
            pass
        elif sys.version_info >= (3, 11):
            MODE = "new"
        """
    )
    assert module.assignments["MODE"].guards == (
        "not (TYPE_CHECKING)",
        "sys.version_info >= (3, 11)",
    )


def test_find():
    module = parse(MODULE_CODE + CLASS_CODE.replace("class Trainer", "class Trainer2"))
    assert module.find("Trainer").name == "Trainer"
    assert module.find("Trainer.compute_loss").qualname == "Trainer.compute_loss"
    assert module.find("fixed_cross_entropy").name == "fixed_cross_entropy"
    assert module.find("Trainer2.Inner").qualname == "Trainer2.Inner"
    assert module.find("Trainer2.Inner.deep").qualname == "Trainer2.Inner.deep"
    with pytest.raises(Drift, match=r"Trainer\.training_step: class Trainer in"):
        module.find("Trainer.training_step")
    with pytest.raises(Drift, match=r"'Trainer3' not found in .*: no class or function"):
        module.find("Trainer3")
    with pytest.raises(Drift, match="nested in functions are not indexed"):
        module.find("helper.nested_fn")
    with pytest.raises(Drift, match=r"class 'Trainr' not found"):
        module.find("Trainr.compute_loss")
    with pytest.raises(Drift, match=r"Trainer2\.Nope: class Trainer2 .* no nested class"):
        module.find("Trainer2.Nope.deep")


def test_all_functions():
    module = parse(MODULE_CODE + CLASS_CODE.replace("class Trainer", "class Trainer2"))
    qualnames = [f.qualname for f in module.all_functions()]
    assert qualnames[:5] == ["fixed_cross_entropy", "train", "training", "trainer_main", "helper"]
    assert "Trainer.compute_loss" in qualnames
    assert "Trainer2.Inner.deep" in qualnames
    assert "nested_fn" not in qualnames
    assert len(qualnames) == len(set(qualnames))


def test_module_drift_messages_name_path_origin_and_close_matches():
    module = parse(MODULE_CODE)
    with pytest.raises(Drift) as err:
        module.function("trainer")
    msg = str(err.value)
    assert msg.startswith(f"function 'trainer' not found in {PATH} ({ORIGIN}); functions")
    listed = msg.split("functions defined there: ", 1)[1].split(", ")
    assert listed[0] in {"train", "trainer_main", "training"}
    assert "helper" in msg
    with pytest.raises(Drift, match=r"class 'trainer' not found in .*defined there: Trainer"):
        module.cls("trainer")
    # A symbol bound another way is reported as such.
    with pytest.raises(Drift, match=r"'np' is imported there \(import numpy, line 4\)"):
        module.cls("np")
    with pytest.raises(Drift, match=r"'DataCollator' is imported there \(from \.data import"):
        module.cls("DataCollator")
    with pytest.raises(Drift, match=r"'fixed_cross_entropy' is a function there"):
        module.cls("fixed_cross_entropy")
    with pytest.raises(Drift, match=r"'logger' is assigned there \(logger = log.get_logger"):
        module.function("logger")


def test_drift_listing_is_capped_closest_first():
    code = "\n".join(f"class Model{i}: pass" for i in range(40)) + "\nclass Trainer: pass\n"
    module = parse_module(code, path="m.py")
    with pytest.raises(Drift) as err:
        module.cls("Model7x")
    msg = str(err.value)
    assert "in m.py;" in msg  # no origin given: no empty parentheses
    listed = msg.split("classes defined there: ", 1)[1]
    assert listed.startswith("Model7")
    assert listed.endswith("(26 more)")
    assert listed.count(", ") == 15


def test_drift_is_an_assertion_error_not_infrastructure():
    with pytest.raises(AssertionError):
        parse("x = 1").cls("X")
    with pytest.raises(Drift, match=r"\(none\)"):
        parse("x = 1").function("f")


# --------------------------------------------------------------------------- parsing input


def test_parse_error_names_path_origin_line_python():
    with pytest.raises(ParseError) as err:
        parse_module("x = 1\ndef f(:\n    pass\n", path=PATH, origin=ORIGIN)
    msg = str(err.value)
    py = f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert msg.startswith(f"the running Python {py} cannot parse {PATH} ({ORIGIN}), line 2:")
    assert isinstance(err.value, InfrastructureError)
    assert not isinstance(err.value, AssertionError)


def test_parse_error_null_bytes_and_bad_encoding():
    with pytest.raises(ParseError, match=r"cannot parse a\.py \(o\), line 2"):
        parse_module(b"x = 1\ny = '\x00'\n", path="a.py", origin="o")
    with pytest.raises(ParseError, match=r"cannot parse a\.py \(o\), line 3: cannot decode"):
        parse_module(b"x = 1\ny = 2\nz = '\xff'\n", path="a.py", origin="o")
    with pytest.raises(ParseError, match=r"a\.py"):
        parse_module(b"# -*- coding: no-such-codec -*-\nx = 1\n", path="a.py", origin="o")
    with pytest.raises(ParseError, match=r"a\.py, line 1"):
        parse_module("x = '\udc80'\n", path="a.py")


def test_bytes_encodings_bom_crlf_and_non_ascii_offsets():
    latin = "# -*- coding: latin-1 -*-\ndef f():\n    return g('é')\n".encode("latin-1")
    f = parse_module(latin, path="a.py").function("f")
    assert f.calls[0].source == "g('é')"
    bom = parse_module(b"\xef\xbb\xbfdef f():\n    pass\n", path="a.py")
    assert bom.has_function("f")
    crlf = parse_module(b"def f():\r\n    a = 1\r\n    return h(a)\r\n", path="a.py")
    assert crlf.function("f").source == "def f():\r\n    a = 1\r\n    return h(a)"
    assert crlf.function("f").calls[0].line == 3
    wide = parse_module(
        "def f():\n    x = 'ü→'; y = call('ö', (\n        'ß'))  # ✓\n", path="a.py"
    ).function("f")
    assert wide.calls[0].source == "call('ö', (\n        'ß'))"
    assert wide.calls[0].args == ("'ö'", "'ß'")
    form_feed = parse_module("\x0cdef f():\n    return k()\n", path="a.py").function("f")
    assert form_feed.calls[0].source == "k()"


def test_sha256_and_python_fields():
    code = b"x = 1\n"
    module = parse_module(code, path="a.py", origin="o")
    assert module.sha256 == hashlib.sha256(code).hexdigest()
    assert parse_module("x = 1\n", path="a.py").sha256 == module.sha256
    assert module.python == f"{sys.version_info[0]}.{sys.version_info[1]}"
    assert module.path == "a.py"
    assert module.origin == "o"
    assert str(INDEX_FORMAT) in INDEX_KEY
    assert module.python in INDEX_KEY


# --------------------------------------------------------------------------- caching


def test_pickle_round_trip():
    module = parse(MODULE_CODE + CLASS_CODE.replace("class Trainer", "class Trainer2"))
    blob = pickle.dumps(module, protocol=pickle.HIGHEST_PROTOCOL)
    loaded = pickle.loads(blob)
    assert loaded == module
    assert loaded.cls("Trainer2").attribute("factory").literal is NOT_LITERAL
    assert loaded.find("Trainer2.Inner.deep") == module.find("Trainer2.Inner.deep")
    assert list(loaded.all_functions()) == list(module.all_functions())


def test_records_pickle_as_dataclasses_does_and_refuse_a_state_of_another_shape():
    """A blob written before the records had their own pickling loads to the same record
    (the state is still the list of field values), and one from a canary whose record had
    other fields is an error (the store then parses the file again), never a half record."""
    import dataclasses

    from canary.codeindex.model import Param, Signature

    param = Param("labels", "POSITIONAL_OR_KEYWORD", "None", "torch.Tensor | None")
    assert param.__getstate__() == [getattr(param, f.name) for f in dataclasses.fields(param)]
    signature = Signature((param,))
    assert pickle.loads(pickle.dumps(signature, protocol=5)) == signature
    blank = object.__new__(Param)
    with pytest.raises(ValueError, match="shorter"):
        blank.__setstate__(["labels", "POSITIONAL_OR_KEYWORD", "None"])


def test_summary_holds_no_ast_nodes():
    import ast

    module = parse(MODULE_CODE + CLASS_CODE.replace("class Trainer", "class Trainer2"))
    seen: set[int] = set()

    def visit(obj: object) -> None:
        if id(obj) in seen:
            return
        seen.add(id(obj))
        assert not isinstance(obj, ast.AST), obj
        if isinstance(obj, dict):
            for k, v in obj.items():
                visit(k)
                visit(v)
        elif isinstance(obj, (tuple, list, frozenset, set)):
            for item in obj:
                visit(item)
        elif hasattr(obj, "__dataclass_fields__"):
            for name in obj.__dataclass_fields__:
                visit(getattr(obj, name))

    visit(module)
    assert len(seen) > 100


def test_summary_is_immutable():
    module = parse("def f(): pass")
    with pytest.raises(AttributeError):
        module.path = "other.py"  # type: ignore[misc]
    with pytest.raises(AttributeError):
        module.function("f").name = "g"  # type: ignore[misc]


def test_relabeled_changes_messages_only():
    module = parse(CLASS_CODE, origin="transformers 5.5.3")
    moved = module.relabeled(path=PATH, origin=ORIGIN)
    assert moved.origin == ORIGIN
    assert moved.sha256 == module.sha256
    assert moved.cls("Trainer").methods == module.cls("Trainer").methods
    with pytest.raises(Drift, match=r"\(transformers 5\.5\.4\)"):
        moved.cls("Trainer").classes["Inner"].method("x")
    assert module.relabeled(path=PATH, origin="transformers 5.5.3") is module


def test_not_literal_sentinel():
    assert repr(NOT_LITERAL) == "NOT_LITERAL"
    assert pickle.loads(pickle.dumps(NOT_LITERAL)) is NOT_LITERAL
    assert codeindex.NOT_LITERAL is NOT_LITERAL


# --------------------------------------------------------------------------- robustness


def test_expression_too_deep_to_unparse_falls_back_to_original_text(monkeypatch):
    # ast.unparse recurses; a few hundred chained operators exhaust the recursion limit.
    # Simulate that deterministically rather than depending on the current stack depth.
    real_unparse = ast.unparse

    def unparse(node):
        if isinstance(node, ast.BinOp):
            raise RecursionError("maximum recursion depth exceeded")
        return real_unparse(node)

    monkeypatch.setattr(ast, "unparse", unparse)
    module = parse_module("def f():\n    return g(a  +  b, c)\n", path="a.py")
    (call,) = module.function("f").calls
    assert call.func == "g"
    assert call.args == ("a  +  b", "c")


def test_real_deep_expression_parses():
    terms = " + ".join(f"v{i}" for i in range(300))
    (call,) = parse_module(f"def f():\n    g({terms})\n", path="a.py").function("f").calls
    assert call.args == (terms,)


def test_too_deep_for_the_parser_is_a_parse_error(monkeypatch):
    def parse(*args, **kwargs):
        raise RecursionError("maximum recursion depth exceeded during ast construction")

    monkeypatch.setattr(ast, "parse", parse)
    with pytest.raises(ParseError, match=r"cannot parse a\.py: nested too deeply"):
        parse_module("x = 1\n", path="a.py")


def test_match_statement_and_except_star():
    module = parse(
        """
        match mode:
            case "a":
                KIND = 1
            case _:
                KIND = 2

        def f(p):
            match p:
                case {"x": x} if check(x):
                    use(x)
        """
    )
    assert module.assignments["KIND"].literal == 1  # first case wins, like if/elif
    assert [c.func for c in module.function("f").calls] == ["check", "use"]


@pytest.mark.skipif(sys.version_info < (3, 11), reason="except* is Python 3.11+")
def test_except_star_at_module_level():
    module = parse("try:\n    A = 1\nexcept* ValueError:\n    A = 2\n")
    assert module.assignments["A"].literal == 1


# --------------------------------------------------------------------------- layering


def test_the_package_layers_import_one_way_only():
    """parse -> model -> body -> expressions: no layer imports one above it, not even
    inside a function (the body walker used to re-enter the parser from Function)."""
    from pathlib import Path

    layers = ["expressions", "body", "model", "parse"]
    package = Path(codeindex.__file__).parent
    for rank, layer in enumerate(layers):
        tree = ast.parse((package / f"{layer}.py").read_text())
        imported = {
            node.module.rpartition(".")[2]
            for node in ast.walk(tree)
            if isinstance(node, ast.ImportFrom)
            and node.module
            and node.module.startswith("canary.codeindex")
        }
        above = imported & set(layers[rank + 1 :])
        assert not above, f"{layer} imports {above}, a layer above it"
        assert "canary.codeindex" not in {
            node.module for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
        }, f"{layer} imports the package itself"
