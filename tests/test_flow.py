"""The data-flow layer of the code index and the expectations built on it: what reaches a
call or a return, on which path, and what fails closed."""

from __future__ import annotations

import pytest

from canary.catalog import (
    expect_assigned_after,
    expect_assignment_where,
    expect_flows_into,
    expect_guarded,
    expect_guards,
    expect_never_assigns,
    expect_reaches,
    expect_returns,
    expect_returns_by_branch,
    expect_updated_once,
)
from canary.codeindex import parse_module
from canary.codeindex.flow import AUGMENTED, MUTATION, PARAMETER, conjuncts, requires
from canary.errors import Drift

SOURCE = """
def _disable(trainer, value=False):
    trainer.flag = value


class Trainer:
    def step(self, model, inputs, n=None):
        loss = self.compute(model, inputs, n=n)
        if self.gpus > 1:
            loss = loss.mean()
        if not self.accepts:
            loss = loss / self.steps
        elif self.other:
            loss /= self.steps
        self.backward(loss)
        loss = loss / self.steps  # after backward: does not reach it
        return loss

    def compute(self, model, inputs, n=None):
        if self.accepts:
            kwargs = {}
            if n is not None:
                kwargs["n"] = n
            inputs = {**inputs, **kwargs}
        outputs = model(**inputs)
        return (outputs.loss, outputs) if self.both else outputs.loss

    def samples(self, batches):
        count = None
        for batch in batches:
            try:
                count = batch.count()
            except TypeError:
                break
        else:
            count = count + 1
        if not self.accepts:
            return batches, None
        return batches, count

    def reset(self, n=None):
        while n:
            n = n - 1
            if n > 3:
                continue
            n = None
        self.call(n=n)

    def opaque(self, n):
        exec("n = 1")
        self.call(n=n)

    def declared(self, n):
        global n
        self.call(n=n)

    def __init__(self, model):
        if model is None:
            _disable(self)
        super().__init__(model)
        _disable(self, value=True)
"""


@pytest.fixture(scope="module")
def trainer():
    return parse_module(SOURCE, path="pkg/trainer.py", origin="pkg 1.0").cls("Trainer")


def _call(function, callee):
    (call,) = function.calls_to(callee)
    return call


def test_bindings_in_order_with_kind_guards_and_whether_they_keep_the_value(trainer):
    step = trainer.method("step")
    bindings = step.flow.of("loss")
    assert [(b.line, b.kind, b.derives) for b in bindings] == [
        (8, "assign", False),
        (10, "assign", True),
        (12, "assign", True),
        (14, AUGMENTED, True),
        (16, "assign", True),
    ]
    assert bindings[2].guards == ("not self.accepts",)
    assert bindings[3].expression == bindings[2].value == "loss / self.steps"
    assert step.flow.of("n")[0].kind == PARAMETER
    assert [b.kind for b in trainer.method("compute").flow.of("kwargs")] == [
        "assign",
        MUTATION,
    ]


def test_history_follows_every_path_to_the_call_and_stops_at_it(trainer):
    step = trainer.method("step")
    backward = _call(step, "self.backward")
    history = step.flow.history("loss", backward.position)
    assert [b.line for b in history] == [8, 10, 12, 14]  # line 16 comes after the call
    returned = step.flow.returns[0]
    assert [b.line for b in step.flow.reaching("loss", returned)] == [16]


def test_sources_follow_the_locals_a_call_reads(trainer):
    compute = trainer.method("compute")
    model_call = _call(compute, "model")
    sources = compute.flow.sources("inputs", model_call.position)
    assert {b.target for b in sources} == {"inputs", "kwargs", "kwargs['n']", "n"}


def test_loops_reach_their_own_head_and_breaks_skip_the_else(trainer):
    samples = trainer.method("samples")
    last = samples.flow.returns[-1]
    # None (no batch), the count (any pass), count + 1 (the loop's else).
    assert [b.value for b in samples.flow.reaching("count", last)] == [
        "None",
        "batch.count()",
        "count + 1",
    ]
    reset = trainer.method("reset")
    call = _call(reset, "self.call")
    # A continue keeps n - 1; None; or the parameter when the loop never runs.
    assert sorted(str(b.value) for b in reset.flow.reaching("n", call.position)) == [
        "None",
        "None",
        "n - 1",
    ]


def test_returns_carry_their_path_and_a_conditional_return_is_one_per_branch(trainer):
    samples = trainer.method("samples")
    assert [(r.value, r.conditions) for r in samples.flow.returns] == [
        ("(batches, None)", ("not self.accepts",)),
        ("(batches, count)", ("self.accepts",)),
    ]
    compute = trainer.method("compute")
    assert [(r.value, r.guards) for r in compute.flow.returns] == [
        ("(outputs.loss, outputs)", ("self.both",)),
        ("outputs.loss", ("not (self.both)",)),
    ]


def test_a_comprehension_variable_is_not_a_local_of_the_function():
    module = parse_module(
        "def f(batch, batches):\n"
        "    total = sum(batch.n for batch in batches)\n"
        "    return total, batch\n",
        path="m.py",
    )
    flow = module.function("f").flow
    (total,) = flow.of("total")
    assert total.reads == {"sum", "batches"}
    assert [line for line, _ in flow.uses("batch")] == [3]  # the comprehension's is its own


def test_a_final_block_sees_every_way_in_and_a_loop_return_is_one_return():
    module = parse_module(
        "def f(x, items):\n"
        "    try:\n"
        "        x = None\n"
        "        x = g(x)\n"
        "    finally:\n"
        "        log(x)\n"
        "    for item in items:\n"
        "        if item:\n"
        "            return item\n"
        "    return x\n",
        path="m.py",
    )
    f = module.function("f")
    (log,) = f.calls_to("log")
    assert [b.value for b in f.flow.reaching("x", log.position)] == [None, "None", "g(x)"]
    assert [b.value for b in f.flow.reaching("x", f.flow.returns[-1])] == ["g(x)"]
    assert [r.value for r in f.flow.returns] == ["item", "x"]


def test_conditions_split_on_and_only():
    assert conjuncts("a and (b and c)") == ("a", "b", "c")
    assert conjuncts("not (a and b)") == ("not a or not b",)
    # negations pushed inward first (De Morgan): each part of the negated ``or`` holds
    assert conjuncts("not (a or b)") == ("not a", "not b")
    assert requires(["x < 1 and self.n is not None"], "self.n is not None")
    assert not requires(["not (self.n is not None)"], "self.n is not None")
    assert not requires(["a or self.n is not None"], "self.n is not None")
    assert requires(["not self.n"], "not (self.n)")


def test_expect_reaches_wants_the_value_unreplaced_on_every_path(trainer):
    step = trainer.method("step")
    (call,) = expect_reaches(step, "n", "self.compute", keyword="n")
    assert call.line == 8
    with pytest.raises(Drift, match=r"may be replaced on the way: line \d+: n = None"):
        expect_reaches(trainer.method("reset"), "n", "self.call", keyword="n")
    with pytest.raises(Drift, match="without model in n="):
        expect_reaches(step, "model", "self.compute", keyword="n")


def test_what_cannot_be_decided_fails_closed(trainer):
    with pytest.raises(Drift, match=r"cannot tell where n comes from \(it calls locals"):
        expect_reaches(trainer.method("opaque"), "n", "self.call", keyword="n")
    with pytest.raises(Drift, match="declares n global or nonlocal"):
        expect_reaches(trainer.method("declared"), "n", "self.call", keyword="n")


def test_expect_flows_into_follows_the_binding_to_the_call_and_the_return(trainer):
    compute = trainer.method("compute")
    binding = expect_flows_into(
        compute, "kwargs['n']", "model", guard="self.accepts", values=["n"], carrying="n"
    )
    assert binding.line == 23
    samples = trainer.method("samples")
    expect_flows_into(samples, "count", None, values=["batch.count()"])
    with pytest.raises(Drift, match=r"never reaches self.compute"):
        expect_flows_into(trainer.method("step"), "loss", "self.compute")
    # Derived on the way (loss / self.steps after the call) is still the same value.
    expect_flows_into(trainer.method("step"), "loss", None, values=["loss.mean()"])
    with pytest.raises(
        Drift,
        match=r"n = n - 1 may be replaced before it reaches `self.call\(n=n\)` by: line 46",
    ):
        expect_flows_into(trainer.method("reset"), "n", "self.call", values=["n - 1"])


def test_expect_updated_once_counts_the_changes_on_every_path_to_the_call(trainer):
    step = trainer.method("step")
    with pytest.raises(Drift, match="changes loss by steps more than once; its changes"):
        expect_updated_once(
            step, "loss", "self.backward", mentioning=["steps"], values=["loss / self.steps"]
        )
    with pytest.raises(Drift, match="never"):
        expect_updated_once(
            step, "loss", "self.backward", mentioning=["nothing"], values=["loss / self.steps"]
        )


def test_guards_as_parts_of_a_condition_or_exact_lists(trainer):
    compute = trainer.method("compute")
    (mutation,) = [a for a in compute.assignments if a.targets == ("kwargs['n']",)]
    expect_guarded(compute, mutation, "n is not None")
    with pytest.raises(Drift, match=r"no longer runs only under `self.other`"):
        expect_guarded(compute, mutation, "self.other")
    assert expect_guards(compute, mutation, ("self.accepts", "n is not None")) == mutation.guards
    with pytest.raises(Drift, match=r"now runs under `self.accepts` and `n is not None`, not"):
        expect_guards(compute, mutation, ("self.accepts",))


def test_returns_by_branch_tell_swapped_branches(trainer):
    samples = trainer.method("samples")
    expect_returns_by_branch(
        samples, {"not self.accepts": "(batches, None)", "self.accepts": "(batches, count)"}
    )
    assert expect_returns(samples, "(batches, None)", when="not (self.accepts)") == (
        "(batches, None)"
    )
    with pytest.raises(Drift, match=r"exactly when `self.accepts`; it returns: line \d+"):
        expect_returns(samples, "(batches, None)", when="self.accepts")


def test_module_level_helpers_are_followed_one_call_deep(trainer):
    module = parse_module(SOURCE, path="pkg/trainer.py", origin="pkg 1.0")
    init = trainer.method("__init__")
    with pytest.raises(Drift, match=r"no longer assigns self.flag"):
        expect_assignment_where(init, "self.flag")
    found = expect_assignment_where(init, "self.flag", after="super().__init__", helpers=module)
    assert (found.line, found.value, found.guards) == (61, "value", ())
    after = expect_assigned_after(init, "self.flag", "super().__init__", helpers=module)
    assert [a.line for a in after] == [61]
    guarded = expect_assignment_where(init, "self.flag", guard="model is None", helpers=module)
    assert guarded.line == 59
    with pytest.raises(Drift, match="in a module-level helper it calls there"):
        expect_never_assigns(module.cls("Trainer"), "self.flag", helpers=module)
