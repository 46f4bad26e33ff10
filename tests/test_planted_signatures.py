"""Planted upstream changes of issue 11's classes 1 and 4a, run through the real catalog.

Class 1, a signature is more than names: a changed default and a parameter made
keyword-only break a fix although every name is still there; a keyword-only parameter that
every caller passes by keyword does not. Class 4a, equivalent code is not drift: operands
of a pure ``and``/``or`` reordered and a local renamed leave the fix working; a reordering
that drops a guard's protection, or a regrouping, does not.

Each snippet is copied from the released transformers 5.3.0 (trainer.py, loss/loss_utils.py,
quantizers/quantizers_utils.py, trimmed to the functions the checks read); each plant was
first run for real on the unpacked 5.3.0 wheel with ``--canary-local``. The tree is checked
as transformers 5.3.0 by the catalog's own ``canary/checks/test_transformers.py``, offline.
Where it is cheap, the planted code is also run, to confirm that a breaking plant really
breaks the fix's use of it and a harmless one does not.
"""

from __future__ import annotations

import inspect
import itertools
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace

import pytest

import canary.checks
from canary.fixes.chunked_loss import chunked_cross_entropy

pytest_plugins = ["pytester"]

CATALOG = Path(canary.checks.__file__).parent / "test_transformers.py"

TAGS = """
[packages.transformers]
repo = "huggingface/transformers"
package_dir = "src"
floor = "4.46.0"
versions = ["5.3.0"]
"""

DIVISION_GUARD = (
    "if (not self.model_accepts_loss_kwargs or num_items_in_batch is None) "
    "and self.compute_loss_func is None:"
)

# transformers 5.3.0, trainer.py: the parts of Trainer the selected checks read (the
# division guard is one line there, too long for this file).
TRAINER = """
import inspect


class Trainer:
    def __init__(self, model=None, args=None):
        # ---- 6. Model introspection -------------------------------------------------
        unwrapped_model = unwrap_peft_model(self.accelerator.unwrap_model(model))

        if hasattr(unwrapped_model, "accepts_loss_kwargs"):
            self.model_accepts_loss_kwargs = unwrapped_model.accepts_loss_kwargs
        else:
            forward_params = inspect.signature(unwrapped_model.forward).parameters
            self.model_accepts_loss_kwargs = any(
                k.kind == inspect.Parameter.VAR_KEYWORD for k in forward_params.values()
            )

        # Sequence Parallelism computes its own good_tokens count
        pc = getattr(self.accelerator, "parallelism_config", None)
        if pc is not None and pc.sp_backend == "deepspeed" and pc.sp_enabled:
            self.model_accepts_loss_kwargs = False

    def training_step(
        self,
        model: nn.Module,
        inputs: dict[str, torch.Tensor | Any],
        num_items_in_batch: torch.Tensor | int | None = None,
    ) -> torch.Tensor:
        with cp_context():
            with self.compute_loss_context_manager():
                loss = self.compute_loss(model, inputs, num_items_in_batch=num_items_in_batch)

            if self.args.n_gpu > 1:
                loss = loss.mean()  # mean() to average on multi-gpu parallel training

            <division guard>
                loss = loss / self.current_gradient_accumulation_steps

            self.accelerator.backward(loss, **kwargs)

            return loss.detach()

    def compute_loss(
        self,
        model: nn.Module,
        inputs: dict[str, torch.Tensor | Any],
        return_outputs: bool = False,
        num_items_in_batch: torch.Tensor | int | None = None,
    ) -> torch.Tensor | tuple[torch.Tensor, Any]:
        if self.model_accepts_loss_kwargs:
            kwargs = {}
            if num_items_in_batch is not None:
                kwargs["num_items_in_batch"] = num_items_in_batch
            inputs = {**inputs, **kwargs}
        return model(**inputs)
""".replace("<division guard>", DIVISION_GUARD)

# transformers 5.3.0, loss/loss_utils.py.
LOSS_UTILS = """
def ForCausalLMLoss(
    logits,
    labels,
    vocab_size: int,
    num_items_in_batch: torch.Tensor | None = None,
    ignore_index: int = -100,
    shift_labels: torch.Tensor | None = None,
    **kwargs,
) -> torch.Tensor:
    logits = logits.float()
    if shift_labels is None:
        labels = nn.functional.pad(labels, (0, 1), value=ignore_index)
        shift_labels = labels[..., 1:].contiguous()
    logits = logits.view(-1, vocab_size)
    shift_labels = shift_labels.view(-1)
    shift_labels = shift_labels.to(logits.device)
    loss = fixed_cross_entropy(logits, shift_labels, num_items_in_batch, ignore_index, **kwargs)
    return loss
"""

# transformers 5.3.0, quantizers/quantizers_utils.py.
QUANTIZERS_UTILS = """
import re


def should_convert_module(full_name, patterns: list[str] | None = None):
    if patterns is None:
        return True
    should_not_convert = any(
        re.match(f"{key}\\\\.", full_name)
        or re.match(f"{key}", full_name)
        or full_name.endswith(key)
        for key in patterns
    )
    return not should_not_convert
"""

FILES = {
    "transformers/__init__.py": "",
    "transformers/trainer.py": TRAINER,
    "transformers/loss/loss_utils.py": LOSS_UTILS,
    "transformers/quantizers/quantizers_utils.py": QUANTIZERS_UTILS,
}


@dataclass(frozen=True)
class Plant:
    """One realistic upstream change: ``old`` replaced by ``new`` in ``path``."""

    name: str
    path: str
    old: str
    new: str
    check: str  # the catalog check that protects the fix
    breaking: bool
    found: str = ""  # what a breaking plant's drift report says upstream has instead

    def source(self) -> str:
        text = FILES[self.path]
        assert text.count(self.old) == 1, f"{self.name}: the snippet no longer holds {self.old!r}"
        return text.replace(self.old, self.new)


SP_GUARD = 'if pc is not None and pc.sp_backend == "deepspeed" and pc.sp_enabled:'

PLANTS = (
    # -- class 1: a signature is more than names ----------------------------------------
    Plant(
        "ignore_index default changed",
        "transformers/loss/loss_utils.py",
        "ignore_index: int = -100,",
        "ignore_index: int = -1,",
        "test_for_causal_lm_loss_parameters",
        breaking=True,
        found="ForCausalLMLoss: ignore_index defaults to -1, not -100",
    ),
    Plant(
        "patterns made keyword-only",
        "transformers/quantizers/quantizers_utils.py",
        "def should_convert_module(full_name, patterns",
        "def should_convert_module(full_name, *, patterns",
        "test_should_convert_module_signature",
        breaking=True,
        found="patterns is keyword-only now, so a call passing it by position (argument 1) breaks",
    ),
    Plant(
        "num_items_in_batch made keyword-only in compute_loss",
        "transformers/trainer.py",
        "        return_outputs: bool = False,\n        num_items_in_batch",
        "        return_outputs: bool = False,\n        *,\n        num_items_in_batch",
        "test_compute_loss_takes_num_items_in_batch",
        breaking=False,
    ),
    Plant(
        "ignore_index moved behind a new keyword-only marker",
        "transformers/loss/loss_utils.py",
        "    ignore_index: int = -100,\n    shift_labels: torch.Tensor | None = None,\n",
        "    shift_labels: torch.Tensor | None = None,\n    *,\n    ignore_index: int = (-100),\n",
        "test_for_causal_lm_loss_parameters",
        breaking=False,
    ),
    # -- class 4a: equivalent code is not drift -------------------------------------------
    Plant(
        "sequence-parallel guard reordered past its None test",
        "transformers/trainer.py",
        SP_GUARD,
        'if pc.sp_enabled and pc.sp_backend == "deepspeed" and pc is not None:',
        "test_init_forces_false_under_deepspeed_sequence_parallel",
        breaking=True,
        found="self.model_accepts_loss_kwargs = False under `pc.sp_enabled and",
    ),
    Plant(
        "division guard regrouped",
        "transformers/trainer.py",
        DIVISION_GUARD,
        "if not self.model_accepts_loss_kwargs or num_items_in_batch is None "
        "and self.compute_loss_func is None:",
        "test_training_step_divides_unless_model_accepts_loss_kwargs",
        breaking=True,
        found="under `not self.model_accepts_loss_kwargs or (num_items_in_batch is None and",
    ),
    Plant(
        "division guard operands reordered",
        "transformers/trainer.py",
        DIVISION_GUARD,
        "if self.compute_loss_func is None and "
        "(num_items_in_batch is None or not self.model_accepts_loss_kwargs):",
        "test_training_step_divides_unless_model_accepts_loss_kwargs",
        breaking=False,
    ),
    Plant(
        "forward_params and the generator's k renamed",
        "transformers/trainer.py",
        "            forward_params = inspect.signature(unwrapped_model.forward).parameters\n"
        "            self.model_accepts_loss_kwargs = any(\n"
        "                k.kind == inspect.Parameter.VAR_KEYWORD for k in forward_params.values()",
        "            signature_params = inspect.signature(unwrapped_model.forward).parameters\n"
        "            self.model_accepts_loss_kwargs = any(\n"
        "                p.kind == inspect.Parameter.VAR_KEYWORD for p in "
        "signature_params.values()",
        "test_init_falls_back_to_var_keyword_forward",
        breaking=False,
    ),
)

CHECKS = sorted({p.check for p in PLANTS})


@pytest.fixture
def catalog(pytester: pytest.Pytester, tmp_path: Path, monkeypatch) -> pytest.Pytester:
    """A rootdir holding the real transformers catalog and a tags.toml for it."""
    monkeypatch.setenv("CANARY_CACHE_DIR", str(tmp_path / "cache"))
    pytester.makefile(".toml", tags=TAGS)
    pytester.makepyfile(test_transformers=CATALOG.read_text("utf-8"))
    return pytester


def check_tree(catalog: pytest.Pytester, root: Path, plant: Plant | None, *checks: str):
    for path, released in FILES.items():
        file = root / path
        file.parent.mkdir(parents=True, exist_ok=True)
        planted = plant is not None and path == plant.path
        file.write_text(plant.source() if planted else released, "utf-8")
    return catalog.runpytest(
        "-p",
        "no:cacheprovider",
        "--canary-offline",
        f"--canary-local=transformers@5.3.0={root}",
        "-k",
        " or ".join(checks),
    )


def test_the_released_snippets_pass_every_protecting_check(catalog, tmp_path):
    result = check_tree(catalog, tmp_path / "released", None, *CHECKS)
    result.assert_outcomes(passed=len(CHECKS))


@pytest.mark.parametrize("plant", PLANTS, ids=lambda p: p.name.replace(" ", "-"))
def test_a_plant_fails_its_check_exactly_when_it_breaks_the_fix(catalog, tmp_path, plant):
    result = check_tree(catalog, tmp_path / "planted", plant, plant.check)
    if not plant.breaking:
        result.assert_outcomes(passed=1)
        return
    result.assert_outcomes(failed=1)
    output = result.stdout.str()
    assert "upstream drift in transformers 5.3.0 breaks the" in output
    assert plant.found in output


# -- the planted code itself: what the fixes meet when they run it -------------------------


def _defined(source: str, name: str, **names: object):
    # Stand-ins for what the snippets' annotations name (evaluated when a def runs).
    namespace: dict[str, object] = {
        "torch": SimpleNamespace(Tensor=object),
        "nn": SimpleNamespace(Module=object),
        "Any": object,
        **names,
    }
    exec(compile(source, f"<{name}>", "exec"), namespace)
    return namespace[name]


def _plant(name: str) -> Plant:
    return next(p for p in PLANTS if p.name == name)


def test_a_keyword_only_patterns_breaks_the_patchs_positional_call():
    plant = _plant("patterns made keyword-only")
    released = _defined(FILES[plant.path], "should_convert_module")
    planted = _defined(plant.source(), "should_convert_module")
    assert released("model.lm_head", ["lm_head"]) is False
    with pytest.raises(TypeError, match="positional argument"):
        planted("model.lm_head", ["lm_head"])


def test_a_changed_ignore_index_default_no_longer_matches_the_chunked_loss():
    # The chunked forward never passes ignore_index: upstream's default must be its own.
    own = inspect.signature(chunked_cross_entropy).parameters["ignore_index"].default
    for name, matches in (
        ("ignore_index default changed", False),
        ("ignore_index moved behind a new keyword-only marker", True),
    ):
        plant = _plant(name)
        loss = _defined(plant.source(), "ForCausalLMLoss")
        assert (inspect.signature(loss).parameters["ignore_index"].default == own) is matches


def test_a_keyword_only_num_items_in_batch_still_takes_training_steps_call():
    plant = _plant("num_items_in_batch made keyword-only in compute_loss")
    trainer = _defined(plant.source(), "Trainer")
    seen = {}
    instance = trainer.__new__(trainer)
    instance.model_accepts_loss_kwargs = True
    # training_step's own call, compute_loss(model, inputs, num_items_in_batch=...).
    instance.compute_loss(lambda **kw: seen.update(kw), {"labels": 1}, num_items_in_batch=7)
    assert seen == {"labels": 1, "num_items_in_batch": 7}


def _guard(source: str, guard_line: str):
    """The ``if`` test of ``guard_line`` in ``source`` (as planted) as a function of names."""
    line = next(line.strip() for line in source.splitlines() if line.strip() == guard_line)
    test = line.removeprefix("if ").removesuffix(":")
    return lambda **names: eval(test, {}, names)


def test_reordering_past_the_none_test_crashes_where_the_released_guard_does_not():
    plant = _plant("sequence-parallel guard reordered past its None test")
    assert _guard(TRAINER, SP_GUARD)(pc=None) is False
    with pytest.raises(AttributeError):
        _guard(plant.source(), plant.new)(pc=None)


def test_the_division_guard_reordered_decides_alike_and_regrouped_does_not():
    released = _guard(TRAINER, DIVISION_GUARD)
    reordered = _plant("division guard operands reordered")
    regrouped = _plant("division guard regrouped")
    same = _guard(reordered.source(), reordered.new)
    other = _guard(regrouped.source(), regrouped.new)
    differ = []
    for accepts, items, func in itertools.product((True, False), (3, None), (None, "f")):
        self = SimpleNamespace(model_accepts_loss_kwargs=accepts, compute_loss_func=func)
        names = {"self": self, "num_items_in_batch": items}
        assert bool(same(**names)) == bool(released(**names))
        if bool(other(**names)) != bool(released(**names)):
            differ.append((accepts, items, func))
    # A custom compute_loss_func with a model that takes no loss kwargs: divided again.
    assert (False, 3, "f") in differ


def test_renamed_locals_compute_the_same_fallback():
    plant = _plant("forward_params and the generator's k renamed")
    for source in (TRAINER, plant.source()):
        trainer = _defined(source, "Trainer", unwrap_peft_model=lambda m: m)
        instance = trainer.__new__(trainer)
        instance.accelerator = SimpleNamespace(unwrap_model=lambda m: m)
        results = []
        for forward in (lambda x, **kwargs: x, lambda x: x):
            trainer.__init__(instance, model=SimpleNamespace(forward=forward))
            results.append(instance.model_accepts_loss_kwargs)
        assert results == [True, False]


def test_the_compute_loss_order_trl_calls_bind_by_is_the_released_trainers():
    # canary/checks/contracts.py: declared for trl's positional super().compute_loss.
    from canary.checks.contracts import TRAINER_COMPUTE_LOSS
    from canary.codeindex import parse_module
    from canary.expectations import expect_parameters

    trainer = parse_module(FILES["transformers/trainer.py"], path="transformers/trainer.py")
    expect_parameters(
        trainer.cls("Trainer").method("compute_loss"), *TRAINER_COMPUTE_LOSS, positional=1
    )
