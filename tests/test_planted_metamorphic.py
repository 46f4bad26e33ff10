# ruff: noqa: E501  (the snippets keep upstream's own long lines)
"""Planted drifts on the other side of each generalisation the metamorphic test asked of the
engine (tests/test_metamorphic.py): what a harmless rewrite may change, a breaking change
that looks like it must still fail its check.

* locals compared modulo renaming -- a renamed *parameter* is not a renamed local: callers
  pass it by name, so the check that follows it must fail.
* a class's methods looked up through its static MRO -- a mixin earlier in the bases that
  overrides the method with other behaviour is what the class runs, and a method no class
  of the package binds any more (inherited from transformers' Trainer) is gone.
* conditions normalised for negation -- ``a if c else b`` written ``b if not c else a`` is
  the same, but the branches swapped without negating the test is drift.
* arguments judged by binding to the callee's signature (a function or method of the same
  module) -- ``f(a, n)`` is ``f(a, num_items_in_batch=n)`` when that is ``f``'s next
  positional parameter, never when it is keyword-only; a module imported under an alias is
  that module, never another one under its name.
"""

from __future__ import annotations

import importlib
import re

import pytest
import test_planted_flow as flow
import test_planted_mro as mro

from canary.codeindex import parse_module
from canary.errors import Drift
from canary.expectations import (
    assignments_to,
    expect_assignment_where,
    expect_base,
    expect_call,
    expect_reaches,
)

COMPUTE_LOSS_CHECK = "test_compute_loss_passes_num_items_in_kwargs"


@pytest.fixture(scope="module")
def checks(request):
    """The catalog's check modules, their markers declared first (as the planted tests do)."""
    for marker in ("upstream(package): the upstream package a check module covers",
                   "canary_check(spec): a catalog check"):  # fmt: skip
        request.config.addinivalue_line("markers", marker)
    return {p: importlib.import_module(f"canary.checks.test_{p}") for p in ("transformers", "trl")}


def _compute_loss_plant() -> flow.Plant:
    return next(p for p in flow.PLANTS if p.check == COMPUTE_LOSS_CHECK)


def test_a_renamed_local_keeps_the_compute_loss_check_green(checks):
    plant = _compute_loss_plant()
    renamed = re.sub(r"\bkwargs\b", "forward_kwargs", plant.source)
    assert "forward_kwargs['num_items_in_batch']" not in plant.source
    assert flow._run(list(checks.values()), plant, renamed) is None


def test_a_renamed_parameter_fails_the_compute_loss_check(checks):
    plant = _compute_loss_plant()
    # compute_loss's own parameter, everywhere it is read; the dict key stays a string.
    start = plant.source.index("    def compute_loss(")
    head, body = plant.source[:start], plant.source[start:]
    renamed = head + re.sub(r"(?<!['\"])\bnum_items_in_batch\b(?!['\"])", "num_items", body)
    assert "def compute_loss(self, model, inputs, return_outputs=False, num_items=None)" in renamed
    drift = flow._run(list(checks.values()), plant, renamed)
    assert drift is not None, "a renamed parameter passed the check"
    assert "breaks the fix 'chunked NLL loss'" in drift


EXISTS = "test_sft_trainer_exists"
HANDS_ON = "test_sft_compute_loss_hands_num_items_in_batch_to_trainer"
MOVED = mro._mixin_sft("from .mixins import _SFTLossMixin", "_SFTLossMixin, _BaseTrainer")
# compute_loss overridden by a mixin first in the bases: the count is dropped on the way.
DROPPING_MIXIN = """
class _FastLossMixin:
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        return super().compute_loss(model, inputs, return_outputs=return_outputs)
"""


MRO_PLANTS = (
    mro.Plant("compute_loss moved to a mixin", EXISTS, MOVED, {mro.MIXINS: mro.LOSS_MIXIN}),
    mro.Plant("compute_loss left to Trainer", EXISTS, mro.SFT_HEAD, breaks="SFTTrainer"),
    mro.Plant(
        "a mixin first in the bases overrides compute_loss, dropping the count",
        HANDS_ON,
        mro._mixin_sft(
            "from .mixins import _SFTLossMixin\nfrom .fast import _FastLossMixin",
            "_FastLossMixin, _SFTLossMixin, _BaseTrainer",
        ),
        {mro.MIXINS: mro.LOSS_MIXIN, "trl/trainer/fast.py": DROPPING_MIXIN},
        breaks="_FastLossMixin",
    ),
)  # fmt: skip


@pytest.mark.parametrize("plant", MRO_PLANTS, ids=[p.name for p in MRO_PLANTS])
def test_a_method_is_what_the_static_mro_resolves(checks, tmp_path, plant):
    drift = mro._run(checks["trl"], tmp_path, plant, plant.sft)
    if plant.breaks is None:
        assert drift is None, f"harmless {plant.name!r} raised drift:\n{drift}"
    else:
        assert drift is not None, f"breaking {plant.name!r} stayed green"
        assert plant.breaks in drift, drift


# transformers 5.25.0, loss/loss_utils.py:35.
FIXED_CROSS_ENTROPY = """
def fixed_cross_entropy(
    source: torch.Tensor,
    target: torch.Tensor,
    num_items_in_batch: torch.Tensor | None = None,
    ignore_index: int = -100,
    **kwargs,
) -> torch.Tensor:
    reduction = "sum" if num_items_in_batch is not None else "mean"
    loss = nn.functional.cross_entropy(source, target, ignore_index=ignore_index, reduction=reduction)
    if reduction == "sum":
        if torch.is_tensor(num_items_in_batch):
            num_items_in_batch = num_items_in_batch.to(loss.device)
        loss = loss / num_items_in_batch
    return loss
"""
REDUCTION = 'reduction = "sum" if num_items_in_batch is not None else "mean"'


@pytest.mark.parametrize(
    ("written", "drifts"),
    [
        (REDUCTION, False),
        ('reduction = "mean" if num_items_in_batch is None else "sum"', False),
        ('reduction = "mean" if not num_items_in_batch is not None else "sum"', False),
        ('reduction = "mean" if not (num_items_in_batch is not None) else "sum"', False),
        ('reduction = "mean" if num_items_in_batch is not None else "sum"', True),
        ('reduction = "sum" if not num_items_in_batch is not None else "mean"', True),
    ],
)
def test_a_conditional_is_read_modulo_negation(checks, written, drifts):
    plant = flow.Plant(
        "fixed_cross_entropy's reduction", "test_fixed_cross_entropy_sums_then_divides_by_num_items",
        "transformers", "5.25.0", "transformers/loss/loss_utils.py", FIXED_CROSS_ENTROPY, (), None,
    )  # fmt: skip
    drift = flow._run(list(checks.values()), plant, FIXED_CROSS_ENTROPY.replace(REDUCTION, written))
    assert (drift is not None) is drifts, drift


# trl-like: compute_loss hands the count to a loss helper of its own module.
HANDS_TO_HELPER = """
import inspect

def chunked_loss(outputs, labels, SIGNATURE):
    return outputs

class SFTTrainer:
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        outputs = model(**inputs)
        loss = chunked_loss(outputs, inputs["labels"], CALL)
        self.forwards_kwargs = any(p.kind == inspect.Parameter.VAR_KEYWORD for p in [])
        return loss
"""


@pytest.mark.parametrize(
    ("signature", "call", "drifts"),
    [
        ("num_items_in_batch=None", "num_items_in_batch=num_items_in_batch", False),
        ("num_items_in_batch=None", "num_items_in_batch", False),
        ("*, num_items_in_batch=None", "num_items_in_batch=num_items_in_batch", False),
        # keyword-only, passed by position: not the count (a TypeError upstream)
        ("*, num_items_in_batch=None", "num_items_in_batch", True),
        # positional-only: the name binds nothing
        ("num_items_in_batch=None, /", "num_items_in_batch", True),
        # the next positional parameter is another one
        ("ignore_index=-100, num_items_in_batch=None", "num_items_in_batch", True),
    ],
)
def test_an_argument_is_judged_by_what_the_callee_binds_it_to(signature, call, drifts):
    source = HANDS_TO_HELPER.replace("SIGNATURE", signature).replace("CALL", call)
    compute_loss = parse_module(source, path="trl/trainer/sft_trainer.py").cls("SFTTrainer")
    compute_loss = compute_loss.method("compute_loss")
    for expectation in (
        lambda: expect_call(
            compute_loss, "chunked_loss", keywords={"num_items_in_batch": "num_items_in_batch"}
        ),
        lambda: expect_reaches(
            compute_loss, "num_items_in_batch", "chunked_loss", keyword="num_items_in_batch"
        ),
    ):
        if drifts:
            with pytest.raises(Drift):
                expectation()
        else:
            expectation()


@pytest.mark.parametrize(
    ("imported", "drifts"),
    [("import inspect", False), ("import inspect as inspect_mm", False),
     ("import typing as inspect_mm", True)],
)  # fmt: skip
def test_a_module_under_an_alias_is_that_module(imported, drifts):
    source = HANDS_TO_HELPER.replace("SIGNATURE", "n=None").replace("CALL", "n=None")
    if imported.endswith("as inspect_mm"):
        source = source.replace("inspect.Parameter", "inspect_mm.Parameter")
    source = source.replace("import inspect\n", imported + "\n")
    method = parse_module(source, path="m.py").cls("SFTTrainer").method("compute_loss")
    value = "any((p.kind == inspect.Parameter.VAR_KEYWORD for p in []))"
    if drifts:
        with pytest.raises(Drift):
            expect_assignment_where(method, "self.forwards_kwargs", values=[value])
    else:
        expect_assignment_where(method, "self.forwards_kwargs", values=[value])


@pytest.mark.parametrize(
    ("imported", "base", "drifts"),
    [
        ("import enum", "enum.Enum", False),
        ("import enum as enum_mm", "enum_mm.Enum", False),
        ("import typing as enum_mm", "enum_mm.Enum", True),  # another module's Enum
    ],
)
def test_a_base_named_through_an_alias_is_that_modules_class(imported, base, drifts):
    source = f'{imported}\n\n\nclass PeftType(str, {base}):\n    LORA = "LORA"\n'
    peft_type = parse_module(source, path="peft/utils/peft_types.py").cls("PeftType")
    if drifts:
        with pytest.raises(Drift, match=r"not from enum\.Enum"):
            expect_base(peft_type, "enum.Enum")
    else:
        assert expect_base(peft_type, "enum.Enum") == "enum.Enum"


# transformers 4.50 Trainer.__init__, its forward-signature default, after the imports and
# rename-locals rewrites together.
SIGNATURE_DEFAULT = """
import IMPORTED as inspect_mm

class Trainer:
    def __init__(self, model):
        forward_params_mm = inspect_mm.signature(model.forward).parameters
        self.model_accepts_loss_kwargs = any((k.kind == inspect_mm.Parameter.VAR_KEYWORD for k in forward_params_mm.values()))
"""


@pytest.mark.parametrize(("imported", "drifts"), [("inspect", False), ("typing", True)])
def test_an_aliased_module_and_a_renamed_local_together(imported, drifts):
    source = SIGNATURE_DEFAULT.replace("IMPORTED", imported)
    init = parse_module(source, path="transformers/trainer.py").cls("Trainer").method("__init__")
    value = "any((k.kind == inspect.Parameter.VAR_KEYWORD for k in forward_params.values()))"

    def expectations() -> None:
        expect_call(init, "inspect.signature")
        expect_assignment_where(init, "self.model_accepts_loss_kwargs", values=[value])

    if drifts:
        with pytest.raises(Drift):
            expectations()
    else:
        expectations()


@pytest.mark.parametrize(
    ("body", "values"),
    [
        ("grad_acc_kwargs['num_steps'] = args.steps", ["args.steps"]),
        ("grad_acc_kwargs_mm['num_steps'] = args.steps", ["args.steps"]),  # the dict renamed
        # two dicts could be the renamed one: neither is guessed
        ("grad_acc_kwargs_mm['num_steps'] = 1\n    other['num_steps'] = 2", []),
    ],
)
def test_assignments_to_a_renamed_local_dict(body, values):
    source = f"def create(args):\n    grad_acc_kwargs_mm = {{}}\n    other = {{}}\n    {body}\n"
    create = parse_module(source, path="transformers/trainer.py").function("create")
    found = assignments_to(create, "grad_acc_kwargs['num_steps']")
    assert [a.value for a in found] == values


# trl-like: the count handed to transformers' Trainer.compute_loss, a callee in another
# package whose order the check declares (canary/checks/contracts.py).
HANDS_TO_SUPER = """
class SFTTrainer(Trainer):
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        return super().compute_loss(CALL)
"""


@pytest.mark.parametrize(
    ("call", "drifts"),
    [
        (
            "model, inputs, return_outputs=return_outputs, num_items_in_batch=num_items_in_batch",
            False,
        ),
        ("model, inputs, return_outputs, num_items_in_batch", False),
        # index 2 is return_outputs: the count would be read as a flag
        ("model, inputs, num_items_in_batch", True),
        # what *rest binds is unknown
        ("model, inputs, *rest", True),
    ],
)
def test_an_argument_to_a_callee_in_another_package_binds_by_its_declared_order(call, drifts):
    from canary.checks.contracts import TRAINER_COMPUTE_LOSS

    source = HANDS_TO_SUPER.replace("CALL", call)
    compute_loss = parse_module(source, path="trl/trainer/sft_trainer.py").cls("SFTTrainer")
    reaches = lambda: expect_reaches(  # noqa: E731
        compute_loss.method("compute_loss"), "num_items_in_batch", "super().compute_loss",
        keyword="num_items_in_batch", positions=TRAINER_COMPUTE_LOSS,
    )  # fmt: skip
    if drifts:
        with pytest.raises(Drift):
            reaches()
    else:
        reaches()
