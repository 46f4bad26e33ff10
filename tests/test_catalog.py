"""The expectations checks are written with: each passes on the right shape and raises
Drift saying what upstream has instead."""

from __future__ import annotations

import pytest

from canary.catalog import (
    check,
    expect_assigned_after,
    expect_assignment,
    expect_base,
    expect_call,
    expect_class_attribute,
    expect_defined,
    expect_hasattr,
    expect_keyword_accepted,
    expect_mentions,
    expect_never_assigns,
    expect_not_declared,
    expect_parameters,
)
from canary.codeindex import parse_module
from canary.errors import Drift

SOURCE = """
class Trainer:
    def compute_loss(self, model, inputs, return_outputs=False, **kwargs):
        loss = model(**inputs)
        self.accelerator.backward(loss)
        return loss

    def training_step(self, model, inputs, num_items_in_batch=None):
        return self.compute_loss(model, inputs)
"""


@pytest.fixture
def trainer():
    return parse_module(SOURCE, path="pkg/trainer.py", origin="pkg 1.0.0").cls("Trainer")


def test_expect_parameters_wants_named_parameters_not_kwargs(trainer):
    expect_parameters(trainer.method("training_step"), "num_items_in_batch")
    with pytest.raises(Drift, match=r"has no parameter 'num_items_in_batch'; its signature is"):
        expect_parameters(trainer.method("compute_loss"), "num_items_in_batch")


def test_expect_keyword_accepted_counts_kwargs(trainer):
    expect_keyword_accepted(trainer.method("compute_loss"), "num_items_in_batch")
    with pytest.raises(Drift, match=r"Trainer\.training_step cannot take labels=\.\.\."):
        expect_keyword_accepted(trainer.method("training_step"), "labels")


def test_expect_call_returns_the_calls_or_lists_what_is_called(trainer):
    (call,) = expect_call(trainer.method("compute_loss"), "self.accelerator.backward")
    assert call.args == ("loss",)
    with pytest.raises(Drift, match=r"no longer calls self\.backward; it calls: model, self"):
        expect_call(trainer.method("compute_loss"), "self.backward")


MODELS = """
from .utils import PreTrainedModel as Base
from .old import moved_helper

LIMIT = 3


def helper():
    pass


class Wrapper(Base):
    accepts_loss_kwargs = False
    other = compute()

    def __init__(self, model):
        if hasattr(self.model, "accepts_loss_kwargs"):
            self.model_accepts_loss_kwargs = self.model.accepts_loss_kwargs
        hasattr(model, "config")
        self.unwrapped, _ = unwrap(model)
"""


@pytest.fixture
def models():
    return parse_module(MODELS, path="pkg/models.py", origin="pkg 1.0.0")


def test_expect_defined_wants_the_definition_not_an_import(models):
    for name in ("LIMIT", "helper", "Wrapper"):
        expect_defined(models, name)
    with pytest.raises(Drift, match=r"'moved_helper' is only imported in .*from \.old import"):
        expect_defined(models, "moved_helper")
    with pytest.raises(Drift, match=r"'missing' not found in pkg/models\.py"):
        expect_defined(models, "missing")


def test_expect_class_attribute_compares_literal_values(models):
    wrapper = models.cls("Wrapper")
    assert expect_class_attribute(wrapper, "accepts_loss_kwargs", False).line == 13
    expect_class_attribute(wrapper, "other")
    with pytest.raises(Drift, match=r"Wrapper\.accepts_loss_kwargs is False .*expected True"):
        expect_class_attribute(wrapper, "accepts_loss_kwargs", True)
    with pytest.raises(Drift, match=r"has no class attribute 'forward'"):
        expect_class_attribute(wrapper, "forward")


def test_expect_not_declared_names_what_is_declared(models):
    expect_not_declared(models.cls("Wrapper"), "forward")
    with pytest.raises(Drift, match=r"Wrapper now declares accepts_loss_kwargs = False"):
        expect_not_declared(models.cls("Wrapper"), "accepts_loss_kwargs")


def test_expect_base_returns_the_base_found(models):
    assert expect_base(models.cls("Wrapper"), "Trainer", "Base") == "Base"
    with pytest.raises(Drift, match=r"derives from \(Base\), not from Trainer or Mixin"):
        expect_base(models.cls("Wrapper"), "Trainer", "Mixin")


def test_expect_hasattr_returns_the_objects_asked(models):
    init = models.cls("Wrapper").method("__init__")
    assert expect_hasattr(init, "accepts_loss_kwargs") == ("self.model",)
    with pytest.raises(Drift, match=r"targets are: hasattr\(model, 'config'\), hasattr\(self"):
        expect_hasattr(init, "loss_kwargs")


def test_expect_assignment_sees_unpacking_and_lists_what_is_assigned(models):
    init = models.cls("Wrapper").method("__init__")
    (found,) = expect_assignment(init, "self.model_accepts_loss_kwargs")
    assert found.value == "self.model.accepts_loss_kwargs"
    assert expect_assignment(init, "self.unwrapped")
    with pytest.raises(Drift, match=r"no longer assigns self\.x; it assigns: _, self\.model_acc"):
        expect_assignment(init, "self.x")


def test_expect_mentions_lists_the_missing_names(models):
    init = models.cls("Wrapper").method("__init__")
    expect_mentions(init, "unwrap", "accepts_loss_kwargs")
    with pytest.raises(Drift, match=r"no longer mentions inference_mode, backward$"):
        expect_mentions(init, "unwrap", "inference_mode", "backward")


TRAINERS = """
class Trainer:
    def __init__(self, model):
        self.model_accepts_loss_kwargs = True


class RLTrainer(Trainer):
    def __init__(self, model):
        self.model_accepts_loss_kwargs = False
        super().__init__(model)
        if model is not None:
            self.model_accepts_loss_kwargs = False


class EarlyTrainer(Trainer):
    def __init__(self, model):
        self.model_accepts_loss_kwargs = False
        super().__init__(model)


class SFTTrainer(Trainer):
    def compute_loss(self, model, inputs):
        return model(**inputs)
"""


@pytest.fixture
def trainers():
    return parse_module(TRAINERS, path="pkg/trainers.py", origin="pkg 1.0.0")


def test_expect_never_assigns_names_the_method_and_line(trainers):
    expect_never_assigns(trainers.cls("SFTTrainer"), "self.model_accepts_loss_kwargs")
    with pytest.raises(
        Drift,
        match=r"Trainer now assigns self\.model_accepts_loss_kwargs in "
        r"pkg/trainers\.py.*: Trainer\.__init__ \(line 4: = True\)",
    ):
        expect_never_assigns(trainers.cls("Trainer"), "self.model_accepts_loss_kwargs")


def test_expect_assigned_after_keeps_only_assignments_after_the_call(trainers):
    init = trainers.cls("RLTrainer").method("__init__")
    (after,) = expect_assigned_after(init, "self.model_accepts_loss_kwargs", "super().__init__")
    assert (after.line, after.guards) == (12, ("model is not None",))
    early = trainers.cls("EarlyTrainer").method("__init__")
    with pytest.raises(
        Drift,
        match=r"\(line 17\) only before it calls super\(\)\.__init__ "
        r"\(line 18\), which overwrites it",
    ):
        expect_assigned_after(early, "self.model_accepts_loss_kwargs", "super().__init__")
    with pytest.raises(Drift, match=r"no longer calls self\.setup"):
        expect_assigned_after(early, "self.model_accepts_loss_kwargs", "self.setup")


# -- transformers catalog expectations -----------------------------------------------------

STEPS = """
from torch.utils.checkpoint import checkpoint
from typing import Unpack as _Unpack
import typing

Unpack = typing.Unpack


class Trainer:
    def training_step(self, loss, accepts, n):
        if not accepts and n is None:
            loss = loss / self.steps
        else:
            loss = loss * 1
        return loss
"""


@pytest.fixture
def steps():
    return parse_module(STEPS, path="pkg/steps.py", origin="pkg 1.0.0")


def test_expect_assignment_where_matches_guard_and_value(steps):
    from canary.catalog import expect_assignment_where

    step = steps.cls("Trainer").method("training_step")
    found = expect_assignment_where(
        step, "loss", guard="not accepts and n is None", values=["loss / self.steps"]
    )
    assert found.line == 12
    assert expect_assignment_where(step, "loss", values=["loss * 1"]).line == 14
    with pytest.raises(
        Drift,
        match=r"no longer assigns loss under `if accepts` to `loss / self\.steps`; its "
        r"assignments to loss: line 12: loss = loss / self\.steps under `not accepts and n is "
        r"None`; line 14: loss = loss \* 1 under `not \(not accepts and n is None\)`",
    ):
        expect_assignment_where(step, "loss", guard="accepts", values=["loss / self.steps"])
    with pytest.raises(Drift, match=r"its assignments to total: none$"):
        expect_assignment_where(step, "total")


def test_expect_bound_accepts_definitions_and_imports(steps):
    from canary.catalog import expect_bound

    assert expect_bound(steps, "Unpack") == "assignment"
    assert expect_bound(steps, "Trainer") == "class"
    assert expect_bound(steps, "checkpoint", imported_from="torch.utils.checkpoint") == "import"
    with pytest.raises(Drift, match=r"'checkpoint' from torch\.utils\.checkpoint .*not from torch"):
        expect_bound(steps, "checkpoint", imported_from="torch")
    with pytest.raises(Drift, match=r"binds 'Unpack' itself now, not by importing typing"):
        expect_bound(steps, "Unpack", imported_from="typing")
    with pytest.raises(Drift, match=r"'Missing' not found in pkg/steps\.py"):
        expect_bound(steps, "Missing")


def test_known_drift_must_lie_inside_the_window_and_say_why():
    with pytest.raises(ValueError, match=r"known_drift 4\.0\.0 is outside the check's window"):
        check(reads="pkg/a.py", fix="chunked NLL loss", since="5.0.0", known_drift={"4.0.0": "x"})
    with pytest.raises(ValueError, match=r"known_drift 5\.1\.0 needs a reason"):
        check(reads="pkg/a.py", fix="chunked NLL loss", known_drift={"5.1.0": " "})
