"""Equivalent expressions (canary.codeindex.equivalence) and the expectations that use them:
parameter kinds, positions and defaults, and expression text compared modulo rewrites that
no caller can tell apart."""

from __future__ import annotations

import pytest

from canary.catalog import (
    expect_assignment_where,
    expect_call,
    expect_hasattr,
    expect_leading_parameters,
    expect_module_value,
    expect_parameters,
    expect_returns,
)
from canary.codeindex import Scope, equivalent, holds_under, parse_module, renaming
from canary.errors import Drift

# -- and/or operand order --------------------------------------------------------------


@pytest.mark.parametrize(
    ("expected", "actual"),
    [
        ("a and b", "b and a"),
        ("not self.x or n is None", "n is None or not self.x"),
        ("(a or b) and c is None", "c is None and (b or a)"),
        ("a and b and c", "c and (b and a)"),  # nested and flattened
        ("pc.backend == 'x' and pc.enabled", "pc.enabled and pc.backend == 'x'"),
        ("isinstance(m, T) and flag", "flag and isinstance(m, T)"),
    ],
)
def test_pure_independent_operands_commute_where_only_truth_counts(expected, actual):
    assert equivalent(expected, actual, boolean=True)
    assert not equivalent(expected, "not (" + actual + ")", boolean=True)


@pytest.mark.parametrize(
    ("expected", "actual"),
    [
        ("a and f()", "f() and a"),  # a call may have effects the short circuit skipped
        ("x is not None and x.y", "x.y and x is not None"),  # the first guards the second
        ("k in d and d[k]", "d[k] and k in d"),
        ("hasattr(m, 'a') and m.a", "m.a and hasattr(m, 'a')"),
        ("n and total / n > 1", "total / n > 1 and n"),  # arithmetic can raise
        ("a and b or c", "a and (b or c)"),  # regrouped, not reordered
    ],
)
def test_operands_that_may_depend_on_the_short_circuit_keep_their_order(expected, actual):
    assert not equivalent(expected, actual, boolean=True)


def test_where_the_value_is_used_only_bool_operands_commute():
    # 0 and None is 0, None and 0 is None: an assignment sees which one.
    assert not equivalent("a and b", "b and a")
    assert equivalent("a is None and b in c", "b in c and a is None")
    assert equivalent("not a or isinstance(b, T)", "isinstance(b, T) or not a")
    # Inside `not` and an if-expression's test only truth counts again.
    assert equivalent("not (a and b)", "not (b and a)")
    assert equivalent("x if a and b else y", "x if b and a else y")
    assert not equivalent("(a and b) if t else y", "(b and a) if t else y")


# -- renamed locals --------------------------------------------------------------------

SCOPE = Scope(
    locals=frozenset({"count_labels", "total", "other"}),
    known=frozenset({"count_labels", "total", "other", "batch_samples", "self", "sum"}),
)


def scope():
    return SCOPE


def test_a_name_the_function_no_longer_has_may_stand_for_one_of_its_locals():
    expected = "sum((labels.ne(-100).sum() for labels in labels_for_count))"
    actual = "sum((x.ne(-100).sum() for x in count_labels))"
    assert renaming(expected, actual, scope) == {"labels_for_count": "count_labels"}
    # Consistently: the same expected name cannot stand for two locals.
    assert renaming("a + a", "total + other", scope) is None
    assert renaming("loss / n", "total / other", scope, given={"loss": "total"}) == {
        "loss": "total",
        "n": "other",
    }
    assert renaming("loss / n", "other / other", scope, given={"loss": "total"}) is None


def test_parameters_attributes_globals_and_known_names_are_never_renamed():
    assert renaming("f(old)", "f(batch_samples)", scope) is None  # a parameter
    assert renaming("self.old", "self.total", scope) is None  # an attribute
    assert renaming("old_helper(x)", "total(x)", scope) is None  # x is no local either way
    assert renaming("other + 1", "total + 1", scope) is None  # other is still there
    assert renaming("a + 1", "total + 1") is None  # module level: nothing is local


def test_names_bound_inside_the_expression_are_renamed_freely():
    assert equivalent("[b for b in xs if b]", "[c for c in xs if c]")
    assert equivalent("lambda k: k.kind", "lambda p: p.kind")
    assert not equivalent("[b for b in xs]", "[b for c in xs]")


FUNCTION = """
import os

counter = 0


def step(self, batch_samples, *args, flag=None, **kwargs):
    global counter
    total = 0
    for item, (a, b) in batch_samples:
        total += item
    with open(a) as handle:
        pass
    try:
        pass
    except ValueError as error:
        pass
    import json as js
    squares = [x * x for x in range(3) if (seen := x)]

    def inner(y):
        hidden = y
        return hidden

    counter = total
    return total
"""


def test_a_functions_locals_are_what_its_own_body_binds():
    step = parse_module(FUNCTION, path="m.py").function("step")
    assert step.scope.locals == frozenset(
        {"total", "item", "a", "b", "handle", "error", "js", "squares", "seen", "inner"}
    )
    assert {"batch_samples", "args", "kwargs", "flag", "self", "open", "x"} <= step.scope.known
    assert "hidden" not in step.scope.known  # the nested function's own body


def test_holds_under_takes_a_whole_guard_or_one_operand_of_its_and():
    guards = ("self.args.x and loss_type == 'chunked'", "not (other)")
    assert holds_under("loss_type == 'chunked'", guards)
    assert holds_under("loss_type == 'chunked' and self.args.x", guards)
    assert not holds_under("other", guards)  # the else side
    assert not holds_under("loss_type == 'chunked'", ("not (loss_type == 'chunked')",))


# -- expectations ------------------------------------------------------------------------

SOURCE = """
LEVELS = a is None or b is None


def loss(logits, labels, /, vocab, num_items_in_batch=None, *, ignore_index=-100, **kw):
    pass


def convert(full_name, *, patterns=None):
    pass


def count(self, batch_samples):
    count_labels = [b['labels'] for b in batch_samples]
    n_items = sum((t.ne(-100).sum() for t in count_labels))
    if self.compute_loss_func is None and (n_items is None or not self.accepts):
        n_items = n_items / self.steps
    self.report(count_labels, total=n_items)
    return (n_items, count_labels)
"""


REORDERED = "(not self.accepts or num_items is None) and self.compute_loss_func is None"


@pytest.fixture
def module():
    return parse_module(SOURCE, path="pkg/loss.py", origin="pkg 5.3.0")


def test_expect_parameters_positional_at_an_index(module):
    loss = module.function("loss")
    expect_parameters(loss, "logits", "labels", "vocab", positional=0)
    expect_parameters(loss, "num_items_in_batch", positional=3)
    with pytest.raises(Drift, match=r"ignore_index is keyword-only now, so a call passing it by "):
        expect_parameters(loss, "ignore_index", positional=4)
    with pytest.raises(Drift, match=r"vocab is at position 2, not 3 \(a positional call hands "):
        expect_parameters(loss, "vocab", positional=3)


def test_expect_parameters_keyword_and_default(module):
    loss = module.function("loss")
    expect_parameters(loss, "vocab", "ignore_index", keyword=True)
    expect_parameters(loss, "labels", keyword=False)
    with pytest.raises(Drift, match=r"labels is positional-only, so a call passing labels=\.\.\. "):
        expect_parameters(loss, "labels", keyword=True)
    expect_parameters(loss, "ignore_index", default=-100)
    expect_parameters(loss, "ignore_index", default="(-100)")
    expect_parameters(loss, "num_items_in_batch", default=None)
    with pytest.raises(Drift, match=r"ignore_index defaults to -100, not -1; its signature is"):
        expect_parameters(loss, "ignore_index", default=-1)
    with pytest.raises(Drift, match=r"vocab has no default now \(expected None\)"):
        expect_parameters(loss, "vocab", default=None)


def test_keyword_only_parameters_are_not_leading_positional_ones(module):
    convert = module.function("convert")
    expect_leading_parameters(convert, "full_name")
    with pytest.raises(Drift, match=r"no longer starts \(full_name, patterns\)"):
        expect_leading_parameters(convert, "full_name", "patterns")


def test_compared_expressions_allow_renamed_locals_and_reordered_guards(module):
    count = module.function("count")
    # Written against a release where the locals were labels_for_count and num_items.
    expect_assignment_where(count, "num_items", guard=REORDERED, values=["num_items / self.steps"])
    expect_assignment_where(
        count, "num_items", values=["sum((labels.ne(-100).sum() for labels in labels_for_count))"]
    )
    expect_call(count, "self.report", args=["labels_for_count"], keywords={"total": "num_items"})
    expect_returns(count, "(num_items, labels_for_count)")
    expect_module_value(module, "LEVELS", values=["b is None or a is None"])


def test_a_renaming_must_be_consistent_and_never_takes_a_parameter(module):
    count = module.function("count")
    # labels_for_count already stands for count_labels in this call.
    with pytest.raises(Drift, match=r"no longer calls self\.report\(labels_for_count, total=lab"):
        expect_call(
            count, "self.report", args=["labels_for_count"], keywords={"total": "labels_for_count"}
        )
    with pytest.raises(Drift, match=r"no longer returns \(num_items, batch_samples\)"):
        expect_returns(count, "(num_items, batch_samples)")
    with pytest.raises(Drift, match=r"no longer assigns num_items under `if self.accepts and"):
        expect_assignment_where(
            count,
            "num_items",
            guard="self.accepts and self.compute_loss_func is None",
            values=["num_items / self.steps"],
        )
    # A renamed target is recognised by its value only: without one, any local would do.
    with pytest.raises(Drift, match=r"its assignments to num_items: none"):
        expect_assignment_where(count, "num_items", guard=REORDERED)


HASATTR = """
def init(self, model):
    inner = unwrap(self.accelerator.unwrap_model(model))
    if hasattr(inner, 'accepts_loss_kwargs'):
        self.model_accepts_loss_kwargs = inner.accepts_loss_kwargs
"""


def test_expect_hasattr_only_on_a_renamed_local():
    init = parse_module(HASATTR, path="pkg/trainer.py").function("init")
    expect_hasattr(init, "accepts_loss_kwargs", only_on="unwrapped_model")
    expect_assignment_where(
        init,
        "self.model_accepts_loss_kwargs",
        guard="hasattr(unwrapped_model, 'accepts_loss_kwargs')",
        values=["unwrapped_model.accepts_loss_kwargs"],
    )
    with pytest.raises(Drift, match=r"asks hasattr\(\.\.\., 'accepts_loss_kwargs'\) on inner, not"):
        expect_hasattr(init, "accepts_loss_kwargs", only_on="model")  # a parameter
