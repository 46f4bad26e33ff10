"""The accepts_loss_kwargs decision rule on plain classes (no torch, no transformers).

The runtime tier proves each value through the real Trainer; these pin the rule's reading of
a forward: which call forwards which ``**kwargs``, past decorators and reformatting.
"""

from __future__ import annotations

import functools
from types import SimpleNamespace
from typing import Any

import pytest

from canary.fixes.accepts_loss_kwargs import (
    Decision,
    computes_loss_blind_to_num_items,
    decide,
    forwards_num_items_to_loss,
    loss_level_index,
    trainer_detection,
    wrapper_chain,
)


def counts_items(logits: Any, labels: Any, vocab_size: int, num_items_in_batch: Any = None) -> Any:
    return ("loss", num_items_in_batch)


def ignores_items(logits: Any, labels: Any, **kwargs: Any) -> Any:
    return "loss"


def passthrough(forward: Any) -> Any:
    @functools.wraps(forward)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        return forward(*args, **kwargs)

    return wrapper


class Module:
    """Just enough of nn.Module for the walk: sub-modules live in ``_modules``."""

    def __init__(self, **modules: Any) -> None:
        self._modules = dict(modules)

    def __getattr__(self, name: str) -> Any:
        try:
            return self.__dict__["_modules"][name]
        except KeyError:
            raise AttributeError(name) from None


class PreTrained(Module):
    """A transformers model: ``loss_function`` on the class, as PreTrainedModel has it."""

    loss = staticmethod(counts_items)

    @property
    def loss_function(self) -> Any:
        return self.loss

    def forward(self, **kwargs: Any) -> Any:  # the inner model computes no loss
        return None


class InnerFalse(PreTrained):
    accepts_loss_kwargs = False


class InnerTrue(PreTrained):
    accepts_loss_kwargs = True


class ForwardsKwargs(PreTrained):
    def forward(self, input_ids: Any = None, labels: Any = None, **lm_kwargs: Any) -> Any:
        outputs = self.model(input_ids=input_ids, **lm_kwargs)
        return self.loss_function(
            logits=outputs,
            labels=labels,
            vocab_size=8,
            **lm_kwargs,
        )


class DecoratedForwardsKwargs(PreTrained):
    @passthrough
    @passthrough
    def forward(self, labels: Any = None, **kwargs: Any) -> Any:
        return self.loss_function(logits=None, labels=labels, vocab_size=8, **kwargs)


class DropsKwargs(PreTrained):
    # Qwen2-VL 4.52-4.55: kwargs reach the inner model, not the loss.
    def forward(self, labels: Any = None, **kwargs: Any) -> Any:
        outputs = self.model(**kwargs)
        return self.loss_function(logits=outputs, labels=labels, vocab_size=8)


class ForwardsOtherMapping(PreTrained):
    def forward(self, labels: Any = None, **kwargs: Any) -> Any:
        extra = {"ignore_index": -100}
        return self.loss_function(logits=None, labels=labels, vocab_size=8, **extra)


class OwnLoss(PreTrained):
    # Gemma3 before 4.57.1: builds its own loss, blind to num_items_in_batch.
    def forward(self, labels: Any = None, **kwargs: Any) -> Any:
        self.model(**kwargs)
        return sum([1.0])


class CrossEntropyLoss:
    """Stands in for torch.nn.CrossEntropyLoss: the rule reads the callee's name only."""

    def __call__(self, logits: Any, labels: Any) -> Any:
        return "mean"


nn = SimpleNamespace(CrossEntropyLoss=CrossEntropyLoss)
F = SimpleNamespace(cross_entropy=lambda logits, labels, reduction="mean": reduction)


class OwnCrossEntropy(PreTrained):
    # Gemma3/PaliGemma 4.50.0: **lm_kwargs (num_items_in_batch among them) reach the inner
    # model, the loss is the wrapper's own per-micro-batch mean.
    def forward(self, input_ids: Any = None, labels: Any = None, **lm_kwargs: Any) -> Any:
        logits = self.model(input_ids=input_ids, **lm_kwargs)
        loss_fct = nn.CrossEntropyLoss()
        return loss_fct(logits, labels)


class FunctionalCrossEntropy(PreTrained):
    def forward(self, labels: Any = None, **kwargs: Any) -> Any:
        return F.cross_entropy(self.model(**kwargs), labels)


class CrossEntropyOverNumItems(PreTrained):
    # Its own cross-entropy, but normalised by the count Trainer hands it: not a mean.
    def forward(self, labels: Any = None, **kwargs: Any) -> Any:
        total = F.cross_entropy(self.model(), labels, reduction="sum")
        return total / kwargs["num_items_in_batch"]


class DeclaresFalseForwardsKwargs(ForwardsKwargs):
    accepts_loss_kwargs = False  # Gemma3n from 5.6: the outer declaration wins


class ForwardsKwargsToBlindLoss(ForwardsKwargs):
    loss = staticmethod(ignores_items)


class LoraModel(Module):
    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.model(*args, **kwargs)


class PeftModel(Module):
    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self.base_model(*args, **kwargs)


def vision(outer: type[PreTrained], peft: bool = False) -> Any:
    model = outer(model=InnerFalse())
    return PeftModel(base_model=LoraModel(model=model)) if peft else model


@pytest.mark.parametrize("peft", [False, True])
@pytest.mark.parametrize(
    ("outer", "expected"),
    [
        (ForwardsKwargs, None),  # Trainer's detection (True) stands
        (DecoratedForwardsKwargs, None),
        (DropsKwargs, False),
        (ForwardsOtherMapping, False),
        (OwnLoss, False),
        (OwnCrossEntropy, False),
        (FunctionalCrossEntropy, False),
        (CrossEntropyOverNumItems, False),  # the inner False: nothing shows it divides right
        (DeclaresFalseForwardsKwargs, False),
        (ForwardsKwargsToBlindLoss, False),
    ],
)
def test_decision(outer: type[PreTrained], expected: bool | None, peft: bool) -> None:
    decision = decide(vision(outer, peft))
    assert isinstance(decision, Decision)
    assert decision.value is expected, decision.reason


def test_the_loss_level_is_the_outermost_transformers_model() -> None:
    chain = wrapper_chain(vision(ForwardsKwargs, peft=True))
    assert [type(level).__name__ for level in chain] == [
        "PeftModel",
        "LoraModel",
        "ForwardsKwargs",
        "InnerFalse",
    ]
    assert loss_level_index(chain) == 2


def test_reasons_name_the_deciding_class() -> None:
    assert "ForwardsKwargs.forward passes its **kwargs" in decide(vision(ForwardsKwargs)).reason
    assert decide(vision(OwnLoss)).reason.startswith("inner InnerFalse declares")
    assert decide(vision(DeclaresFalseForwardsKwargs)).reason.startswith(
        "DeclaresFalseForwardsKwargs declares"
    )


@pytest.mark.parametrize("peft", [False, True])
@pytest.mark.parametrize(
    "outer", [OwnCrossEntropy, FunctionalCrossEntropy, DropsKwargs, ForwardsKwargsToBlindLoss]
)
@pytest.mark.parametrize("inner", [PreTrained, InnerFalse, InnerTrue])
def test_a_loss_blind_to_num_items_is_false_whatever_is_declared_below(
    outer: type[PreTrained], inner: type[PreTrained], peft: bool
) -> None:
    """4.50.0's Gemma3, PaliGemma and Qwen2-VL (own cross-entropy) and 4.52.4's Qwen2-VL
    (loss_function without **kwargs) declare nothing on any level: Trainer's **kwargs
    detection says True over a per-micro-batch mean (4 x too large at 4 steps)."""
    model = outer(model=inner())
    decision = decide(PeftModel(base_model=LoraModel(model=model)) if peft else model)
    assert decision.value is False
    reason = f"{outer.__name__}.forward computes its loss without num_items_in_batch"
    assert decision.reason.startswith(reason), decision.reason
    assert computes_loss_blind_to_num_items(model)


def test_a_loss_that_reads_num_items_is_not_blind_to_it() -> None:
    assert not computes_loss_blind_to_num_items(CrossEntropyOverNumItems(model=PreTrained()))
    assert decide(CrossEntropyOverNumItems(model=PreTrained())).value is None


def test_a_loss_that_gets_num_items_through_kwargs_is_not_blind_to_it() -> None:
    assert not computes_loss_blind_to_num_items(ForwardsKwargs(model=PreTrained()))
    assert not computes_loss_blind_to_num_items(DecoratedForwardsKwargs(model=PreTrained()))


def test_a_forward_computing_no_loss_it_can_see_falls_through() -> None:
    # OwnLoss's loss is not a cross-entropy or loss_function call: the declarations decide.
    assert not computes_loss_blind_to_num_items(OwnLoss(model=PreTrained()))
    assert decide(OwnLoss(model=InnerFalse())).reason.startswith("inner InnerFalse declares")


def test_nothing_declared_is_left_to_trainer() -> None:
    decision = decide(OwnLoss(model=PreTrained()))
    assert decision.value is None
    assert "nothing declares" in decision.reason


def test_forward_without_source_is_not_trusted() -> None:
    # exec'd code has no source file: the rule cannot see what reaches the loss.
    namespace: dict[str, Any] = {}
    exec(  # a forward with no source file, on purpose
        "def forward(self, labels=None, **kwargs):\n"
        "    return self.loss_function(logits=None, labels=labels, vocab_size=8, **kwargs)\n",
        namespace,
    )
    cls = type("NoSource", (PreTrained,), {"forward": namespace["forward"]})
    level = cls(model=InnerFalse())
    assert forwards_num_items_to_loss(level) is False
    assert decide(level).value is False


def test_instance_forward_is_the_one_read() -> None:
    level = OwnLoss(model=InnerFalse())
    # A forward patched onto the instance (as loaders do) is what runs, so it is what counts.
    level.forward = ForwardsKwargs.forward.__get__(level)
    assert forwards_num_items_to_loss(level) is True


class TakesKwargs:
    def forward(self, input_ids: Any = None, **kwargs: Any) -> Any:
        return None


class TakesLossKwargs:
    def forward(self, input_ids: Any = None, **loss_kwargs: Any) -> Any:
        return None


class DeclaresFalse(TakesLossKwargs):
    accepts_loss_kwargs = False


@pytest.mark.parametrize(
    ("version", "kwargs", "loss_kwargs", "declares_false"),
    [
        ("4.46.3", False, True, True),  # **loss_kwargs by name, no hasattr
        ("4.47.1", True, True, True),  # any **kwargs, no hasattr
        ("4.48.0.dev0", True, True, False),  # hasattr first, a dev build as its release
        ("4.50.0", True, True, False),
        ("5.24.0", True, True, False),
    ],
)
def test_trainer_detection_follows_the_release(
    version: str, kwargs: bool, loss_kwargs: bool, declares_false: bool
) -> None:
    """What Trainer.__init__ decides without the fix, as each release's trainer.py reads it."""
    assert trainer_detection(TakesKwargs(), version) is kwargs
    assert trainer_detection(TakesLossKwargs(), version) is loss_kwargs
    assert trainer_detection(DeclaresFalse(), version) is declares_false
