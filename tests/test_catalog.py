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
from canary.errors import Drift, Subject

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


# -- the vocabulary: any_of, module values, decorators, parameters, calls ---------------

SHAPES = """
import contextlib
from importlib.metadata import version

__version__ = version("pkg")
VERSION_TUPLE = (1, 2)


@contextlib.contextmanager
def unwrap(model, accelerator, *args, template_kwargs=None, **kwargs):
    if accelerator is not None:
        model = accelerator.unwrap(model)
    loss = 1
    loss *= 2
    apply(model, "chat", tokenize=False, **kwargs)
    setup()
    ready = True
    return (model, None)


class Model:
    @property
    def base_model(self):
        return self
"""


@pytest.fixture
def shapes():
    return parse_module(SHAPES, path="pkg/shapes.py", origin="pkg 1.0.0")


def test_expect_any_of_returns_the_first_that_holds_and_lists_every_failure(shapes):
    from canary.catalog import expect_any_of, expect_decorated

    unwrap = shapes.function("unwrap")
    found = expect_any_of(
        lambda: expect_decorated(unwrap, "property"),
        lambda: expect_decorated(unwrap, "contextlib.contextmanager"),
    )
    assert found == "contextlib.contextmanager"
    with pytest.raises(
        Drift, match=r"none of 2 alternatives holds: \(1\) .*@property.*; \(2\) "
    ) as e:
        expect_any_of(
            lambda: expect_decorated(unwrap, "property"),
            lambda: expect_parameters(unwrap, "labels"),
        )
    assert e.value.subject == Subject(None, "unwrap")
    assert e.value.kind == Drift.CHANGED
    # Alternatives that fail the same way say it once.
    with pytest.raises(Drift, match=r"^unwrap no longer calls isinstance; it calls: ") as e:
        expect_any_of(
            lambda: expect_call(unwrap, "isinstance", args=["model"]),
            lambda: expect_call(unwrap, "isinstance", args=["accelerator"]),
        )
    # Gone in every alternative: the drift is a MISSING one.
    with pytest.raises(Drift) as e:
        expect_any_of(lambda: shapes.cls("Trainer"), lambda: shapes.function("train"))
    assert e.value.kind == Drift.MISSING
    assert e.value.subject == Subject("pkg/shapes.py", "Trainer")


def test_expect_module_value_compares_text_or_literals(shapes):
    from canary.catalog import expect_module_value

    assert expect_module_value(shapes, "__version__", values=["version('pkg')"]).line == 5
    expect_module_value(shapes, "VERSION_TUPLE", literals=[(1, 2)])
    with pytest.raises(
        Drift,
        match=r"pkg/shapes\.py \(pkg 1\.0\.0\) assigns __version__ = version\('pkg'\) "
        r"\(line 5\), not '1\.0\.0'",
    ) as e:
        expect_module_value(shapes, "__version__", literals=["1.0.0"])
    assert (e.value.subject, e.value.kind) == (Subject("pkg/shapes.py", "__version__"), "changed")
    with pytest.raises(ValueError, match=r"needs values= or literals="):
        expect_module_value(shapes, "__version__")
    with pytest.raises(Drift, match=r"'version' is not assigned at module level .*imported") as e:
        expect_module_value(shapes, "version", values=["x"])
    assert e.value.kind == Drift.MISSING


def test_expect_decorated_compares_whole_decorators(shapes):
    from canary.catalog import expect_decorated

    base_model = shapes.cls("Model").method("base_model")
    assert expect_decorated(base_model, "property") == "property"
    with pytest.raises(
        Drift,
        match=r"unwrap is no longer decorated @contextmanager; it has "
        r"@contextlib\.contextmanager",
    ) as e:
        expect_decorated(shapes.function("unwrap"), "contextmanager")
    assert e.value.subject == Subject(None, "unwrap")


def test_expect_no_parameter_and_parameter_kinds(shapes):
    from canary.catalog import expect_leading_parameters, expect_no_parameter, expect_parameter_kind
    from canary.codeindex import KEYWORD_ONLY, VAR_KEYWORD

    unwrap = shapes.function("unwrap")
    expect_no_parameter(unwrap, "bias")
    with pytest.raises(Drift, match=r"unwrap takes 'accelerator' again; its signature is \(model"):
        expect_no_parameter(unwrap, "bias", "accelerator")
    expect_leading_parameters(unwrap, "model", "accelerator")
    with pytest.raises(Drift, match=r"unwrap\(model, accelerator, .*\) no longer starts \(acc"):
        expect_leading_parameters(unwrap, "accelerator", "model")
    assert expect_parameter_kind(unwrap, "template_kwargs", KEYWORD_ONLY).default == "None"
    expect_parameter_kind(unwrap, "kwargs", VAR_KEYWORD)
    with pytest.raises(Drift, match=r"no var-keyword parameter 'template_kwargs' \(template_kwa"):
        expect_parameter_kind(unwrap, "template_kwargs", VAR_KEYWORD)
    with pytest.raises(Drift, match=r"no keyword-only parameter 'labels' \(labels is not there\)"):
        expect_parameter_kind(unwrap, "labels", KEYWORD_ONLY)


def test_expect_call_matches_leading_args_and_keywords(shapes):
    unwrap = shapes.function("unwrap")
    (call,) = expect_call(unwrap, "apply", args=["model", "'chat'"], keywords={"tokenize": "False"})
    assert call.line == 15
    expect_call(unwrap, "apply", keywords={"**": "kwargs"})
    with pytest.raises(
        Drift, match=r"no longer calls apply\(model, tokenize=True, \.\.\.\); its calls: line 15: "
    ):
        expect_call(unwrap, "apply", args=["model"], keywords={"tokenize": "True"})


def test_expect_assignment_where_unguarded_augmented_and_after(shapes):
    from canary.catalog import expect_assignment_where

    unwrap = shapes.function("unwrap")
    assert expect_assignment_where(unwrap, "loss", augmented="*", values=["2"]).line == 14
    with pytest.raises(Drift, match=r"no longer assigns model unconditionally; its assignments"):
        expect_assignment_where(unwrap, "model", unguarded=True)
    assert expect_assignment_where(unwrap, "ready", after="setup", unguarded=True).line == 17
    with pytest.raises(Drift, match=r"no longer assigns loss after calling setup \(line 16\)"):
        expect_assignment_where(unwrap, "loss", after="setup")


def test_negative_expectations_name_what_is_there(shapes):
    from canary.catalog import expect_not_bound, expect_not_mentioned, expect_returns

    unwrap = shapes.function("unwrap")
    expect_not_mentioned(unwrap, "current_gradient_accumulation_steps")
    with pytest.raises(Drift, match=r"unwrap \(10-18\) now mentions accelerator$"):
        expect_not_mentioned(unwrap, "accelerator", "labels")
    expect_not_bound(shapes, "neftune_hook")
    with pytest.raises(Drift, match=r"now binds 'version'; 'version' is imported there") as e:
        expect_not_bound(shapes, "version")
    assert e.value.subject == Subject("pkg/shapes.py", "version")
    assert expect_returns(unwrap, "model", "(model, None)") == "(model, None)"
    with pytest.raises(Drift, match=r"no longer returns model; it returns: \(model, None\)"):
        expect_returns(unwrap, "model")


def test_expect_hasattr_only_on_one_object(models):
    init = models.cls("Wrapper").method("__init__")
    expect_hasattr(init, "accepts_loss_kwargs", only_on="self.model")
    with pytest.raises(Drift, match=r"on self\.model, not on model alone"):
        expect_hasattr(init, "accepts_loss_kwargs", only_on="model")


def test_every_drift_names_its_subject_and_kind(trainer, models):
    with pytest.raises(Drift) as e:
        trainer.method("forward")
    assert (e.value.subject, e.value.kind) == (
        Subject("pkg/trainer.py", "Trainer.forward"),
        "missing",
    )
    with pytest.raises(Drift) as e:
        expect_parameters(trainer.method("compute_loss"), "num_items_in_batch")
    assert (e.value.subject, e.value.kind) == (Subject(None, "Trainer.compute_loss"), "changed")
    with pytest.raises(Drift) as e:
        expect_base(models.cls("Wrapper"), "Trainer")
    assert e.value.subject == Subject("pkg/models.py", "Wrapper")
    with pytest.raises(Drift) as e:
        expect_defined(models, "moved_helper")
    assert (e.value.subject, e.value.kind) == (Subject("pkg/models.py", "moved_helper"), "changed")


def test_a_check_drift_takes_its_only_file_when_the_subject_names_none(trainer):
    from canary.catalog import drift_subject

    exc = Drift("x", subject=Subject(None, "Trainer.compute_loss"))
    assert drift_subject(exc, ("pkg/trainer.py",)) == Subject(
        "pkg/trainer.py", "Trainer.compute_loss"
    )
    assert drift_subject(exc, ("a.py", "b.py")) == Subject(None, "Trainer.compute_loss")
    assert drift_subject(AssertionError("plain"), ("a.py",)) == Subject("a.py", None)


# -- the check specification and tables -------------------------------------------------


@pytest.fixture
def canary_markers(pytestconfig: pytest.Config) -> None:
    """The marker @check sets, registered as a canary run registers it (this unit session
    is not a canary run, and --strict-markers refuses an unknown marker)."""
    pytestconfig.addinivalue_line("markers", "canary_check(spec): set by @canary.catalog.check")


def test_check_carries_one_typed_spec(canary_markers):
    from canary.catalog import CheckSpec, Window

    @check(reads="pkg/a.py", fix="chunked NLL loss", since="1.0.0", known_drift={"1.1.0": "x"})
    def test_a(upstream):
        """a."""

    (marker,) = test_a.pytestmark
    assert marker.name == "canary_check"
    assert marker.args == (
        CheckSpec(("pkg/a.py",), "chunked NLL loss", Window("1.0.0"), {"1.1.0": "x"}),
    )


def _rows():
    from canary.catalog import row

    return (
        row("test_a_declares", path="pkg/a.py", since="1.0.0", name="A"),
        row("test_b_declares", path="pkg/b.py", until="2.0.0", name="B", fix="chunked NLL loss"),
    )


def test_a_table_is_one_check_per_row_with_its_own_name_files_window_and_fix(canary_markers):
    from canary.catalog import CheckSpec, CheckTable, Window

    calls = []

    @check.each(*_rows(), fix="accepts_loss_kwargs shadowing")
    def declares(upstream, name, path):
        """{name} ({path}) declares it."""
        calls.append((upstream, name, path))

    assert isinstance(declares, CheckTable)
    checks = dict(declares.checks())
    assert list(checks) == ["test_a_declares", "test_b_declares"]
    a, b = checks["test_a_declares"], checks["test_b_declares"]
    assert (a.__name__, a.__doc__) == ("test_a_declares", "A (pkg/a.py) declares it.")
    assert a.pytestmark[0].args[0] == CheckSpec(
        ("pkg/a.py",), "accepts_loss_kwargs shadowing", Window("1.0.0"), {}
    )
    assert b.pytestmark[0].args[0].fix == "chunked NLL loss"  # the row's own fix
    assert b.pytestmark[0].args[0].window == Window(None, "2.0.0")
    b(upstream="snapshot")
    assert calls == [("snapshot", "B", "pkg/b.py")]


def test_a_table_declares_its_checks_once(canary_markers):
    @check.each(*_rows(), fix="accepts_loss_kwargs shadowing")
    def declares(upstream, name, path):
        """{name} ({path}) declares it."""

    # Collection gets the very functions validated at import, not a second declaration.
    first, again = declares.checks(), declares.checks()
    assert all(a is b for (_, a), (_, b) in zip(first, again, strict=True))


def test_a_table_refuses_duplicate_and_stray_names_and_bad_rows(canary_markers):
    from canary.catalog import row

    def body(upstream, name, path):
        """{name}."""

    rows = _rows()
    with pytest.raises(ValueError, match=r"names test_a_declares more than once"):
        check.each(rows[0], rows[0], fix="chunked NLL loss")(body)
    with pytest.raises(ValueError, match=r"must start with test_: a_declares"):
        check.each(row("a_declares", path="pkg/a.py"), fix="chunked NLL loss")
    with pytest.raises(ValueError, match=r"row test_x needs reads= or a path= value"):
        row("test_x", name="A")
    with pytest.raises(KeyError):  # a typo in the fix, at import
        check.each(*rows, fix="no such fix")(body)
