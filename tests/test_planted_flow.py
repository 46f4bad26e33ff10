# ruff: noqa: E501  (the snippets keep upstream's own long lines)
"""Planted upstream changes, issue 11's classes 2 ("the expected line exists" is not "the fix
still works") and 3 (which branch returns what), run through the real catalog checks.

Each case is a snippet of the real released function (transformers 5.3.0, 5.2.0, 4.48.0, trl
0.24.0 and 1.10.0, peft 0.19.0 and 0.21.2, docstrings and unrelated statements trimmed),
checked as released and with one realistic change planted: a breaking change must fail the
check that protects the fix, naming the fix and what changed; a harmless one must stay
green. Most were also planted in the unpacked wheels and run with ``--canary-local``:
there the catalog before the data-flow vocabulary missed all nine breaking plants and
raised drift on two of the six harmless ones.
"""

from __future__ import annotations

import importlib
import textwrap
from dataclasses import dataclass

import pytest
from packaging.version import Version

from canary.codeindex import parse_module
from canary.errors import CheckDrift
from canary.workspace import Case, Snapshot

TRAINER = "transformers/trainer.py"
SFT = "trl/trainer/sft_trainer.py"
GRPO = "trl/trainer/grpo_trainer.py"
PEFT_MODEL = "peft/peft_model.py"

# transformers 5.3.0, Trainer.training_step and compute_loss (trainer.py:1877, 1940).
STEP_5_3_0 = """
class Trainer:
    def training_step(self, model, inputs, num_items_in_batch=None):
        cp_context, inputs = self._prepare_context_parallel_inputs(model, inputs)
        with cp_context():
            model.train()
            inputs = self._prepare_inputs(inputs)
            if is_sagemaker_mp_enabled():
                loss_mb = smp_forward_backward(model, inputs, self.args.gradient_accumulation_steps)
                return loss_mb.reduce_mean().detach().to(self.args.device)

            with self.compute_loss_context_manager():
                loss = self.compute_loss(model, inputs, num_items_in_batch=num_items_in_batch)

            del inputs
            kwargs = {}

            if self.args.n_gpu > 1:
                loss = loss.mean()  # mean() to average on multi-gpu parallel training

            if (not self.model_accepts_loss_kwargs or num_items_in_batch is None) and self.compute_loss_func is None:
                loss = loss / self.current_gradient_accumulation_steps

            if self.accelerator.distributed_type == DistributedType.DEEPSPEED:
                kwargs["scale_wrt_gas"] = False

            self.accelerator.backward(loss, **kwargs)

            return loss.detach()

    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        pc = getattr(self.accelerator, "parallelism_config", None)
        if pc is not None and pc.sp_backend == "deepspeed" and pc.sp_enabled and self.model.training:
            return deepspeed_sp_compute_loss(self.accelerator, model, inputs, return_outputs, pc)

        if (self.label_smoother is not None or self.compute_loss_func is not None) and "labels" in inputs:
            labels = inputs.pop("labels")
        else:
            labels = None
        if self.model_accepts_loss_kwargs:
            kwargs = {}
            if num_items_in_batch is not None:
                kwargs["num_items_in_batch"] = num_items_in_batch
            inputs = {**inputs, **kwargs}
        outputs = model(**inputs)
        loss = outputs["loss"] if isinstance(outputs, dict) else outputs[0]
        return (loss, outputs) if return_outputs else loss

    def _get_num_items_in_batch(self, batch_samples, device):
        num_items_in_batch = None
        count_num_items_in_batch = (
            len(batch_samples) > 0
            and "labels" in batch_samples[0]
            and (self.model_accepts_loss_kwargs or self.compute_loss_func is not None)
        )
        if count_num_items_in_batch:
            # For now we don't support object detection
            try:
                num_items_in_batch = sum((batch["labels"].ne(-100)).sum() for batch in batch_samples)
            except (TypeError, AttributeError):
                pass

        if num_items_in_batch is not None:
            if self.args.average_tokens_across_devices:
                if self.args.world_size > 1:
                    num_items_in_batch = self.accelerator.gather(num_items_in_batch.to(device)).sum()
            elif self.args.n_gpu > 1:
                num_items_in_batch = num_items_in_batch // self.args.n_gpu
            if torch.is_tensor(num_items_in_batch):
                num_items_in_batch = num_items_in_batch.to(device)

        return num_items_in_batch
"""

# transformers 4.48.0, Trainer.get_batch_samples (trainer.py:5150).
SAMPLES_4_48_0 = """
class Trainer:
    def get_batch_samples(self, epoch_iterator, num_batches):
        batch_samples = []
        num_items_in_batch = None
        for _ in range(num_batches):
            try:
                batch_samples += [next(epoch_iterator)]
            except StopIteration:
                break

        # Keep default behavior the same
        if not self.model_accepts_loss_kwargs:
            return batch_samples, None

        if len(batch_samples) > 0 and "labels" in batch_samples[0]:
            # For now we don't support object detection
            try:
                num_items_in_batch = sum([(batch["labels"].ne(-100)).sum() for batch in batch_samples])
            except (TypeError, AttributeError):
                pass

        if self.args.average_tokens_across_devices and num_items_in_batch is not None:
            num_items_in_batch = self.accelerator.gather(num_items_in_batch).sum().item()

        if torch.is_tensor(num_items_in_batch):
            num_items_in_batch = num_items_in_batch.item()

        return batch_samples, num_items_in_batch

    def training_step(self, model, inputs, num_items_in_batch=None):
        model.train()
        inputs = self._prepare_inputs(inputs)
        with self.compute_loss_context_manager():
            if self.model_accepts_loss_kwargs:
                loss = self.compute_loss(model, inputs)
            else:
                loss = self.compute_loss(model, inputs, num_items_in_batch=num_items_in_batch)
        if self.args.n_gpu > 1:
            loss = loss.mean()
        if self.use_apex:
            with amp.scale_loss(loss, self.optimizer) as scaled_loss:
                scaled_loss.backward()
        else:
            if num_items_in_batch is None:
                loss = loss / self.args.gradient_accumulation_steps
            self.accelerator.backward(loss)
            return loss.detach()
"""

# trl 0.24.0, SFTTrainer.compute_loss (sft_trainer.py:1080).
SFT_0_24_0 = """
class SFTTrainer(BaseTrainer):
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        mode = "train" if self.model.training else "eval"
        labels = inputs["labels"]

        # If not set, defaults from model config and may warn since cache isn't compatible with gradient checkpointing
        inputs["use_cache"] = False
        (loss, outputs) = super().compute_loss(
            model, inputs, return_outputs=True, num_items_in_batch=num_items_in_batch
        )
        return (loss, outputs) if return_outputs else loss
"""

# trl 0.24.0, GRPOTrainer.__init__ (grpo_trainer.py:216, the lines around the override).
GRPO_0_24_0 = """
class GRPOTrainer(BaseTrainer):
    def __init__(self, model, reward_funcs, args=None, train_dataset=None):
        super().__init__(model=model, args=args, train_dataset=train_dataset)
        self.generation_config = GenerationConfig(**generation_kwargs)

        # self.model_accepts_loss_kwargs to False to enable scaling.
        self.model_accepts_loss_kwargs = False

        # Add tags to the model
        self.model.add_model_tags(self._tag_names)
"""

# trl 1.10.0, SFTTrainer.__init__ (sft_trainer.py:1340, around super().__init__).
SFT_1_10_0 = """
def dft_loss(outputs, labels, num_items_in_batch=None):
    return outputs.loss


class SFTTrainer(_BaseTrainer):
    def __init__(self, model, args=None, train_dataset=None, compute_loss_func=None):
        super().__init__(
            model=model,
            args=args,
            train_dataset=train_dataset,
            compute_loss_func=compute_loss_func,
        )

        # Initialize activation offloading context
        if self.args.activation_offloading:
            self.maybe_activation_offload_context = get_act_offloading_ctx_manager(model=self.model)
        else:
            self.maybe_activation_offload_context = contextlib.nullcontext()
"""

# peft 0.19.0 and 0.21.2, PeftModel.get_base_model (peft_model.py:1014).
PEFT = '''
class PeftModel(PushToHubMixin, torch.nn.Module):
    def get_base_model(self) -> torch.nn.Module:
        """
        Returns the base model.
        """
        return self.base_model if self.active_peft_config.is_prompt_learning else self.base_model.model
'''

# 4.48.0's early return and the count after it, to be written the other way round.
_COUNTING = (
    SAMPLES_4_48_0[
        SAMPLES_4_48_0.index("        # Keep default") : SAMPLES_4_48_0.index(
            "    def training_step"
        )
    ].rstrip("\n")
    + "\n"
)

# transformers 5.2.0, Trainer.__init__'s model introspection (trainer.py:495) and
# trainer_utils.unwrap_peft_model (trainer_utils.py:74).
INIT_5_2_0 = """
class Trainer:
    def __init__(self, model=None, args=None):
        self.model = model

        # ---- 6. Model introspection -------------------------------------------------
        unwrapped_model = unwrap_peft_model(self.accelerator.unwrap_model(model))

        if hasattr(unwrapped_model, "accepts_loss_kwargs"):
            self.model_accepts_loss_kwargs = unwrapped_model.accepts_loss_kwargs
        else:
            forward_params = inspect.signature(unwrapped_model.forward).parameters
            self.model_accepts_loss_kwargs = any(
                k.kind == inspect.Parameter.VAR_KEYWORD for k in forward_params.values()
            )
"""
UNWRAP_5_2_0 = '''
def unwrap_peft_model(model):
    """
    Extract the base model from a PEFT-wrapped model.
    """
    if not _is_peft_model(model):
        return model
    if hasattr(model, "get_base_model"):
        return model.get_base_model()
    elif hasattr(model, "base_model") and hasattr(model.base_model, "model"):
        # PeftMixedModel do not provide a `get_base_model` method
        return model.base_model.model
    else:
        raise AttributeError("Cannot extract base model safely from this PEFT wrapper.")
'''
TRAINER_UTILS = "transformers/trainer_utils.py"

HELPER = "def _scale_loss_for_accumulation(trainer):\n    trainer.model_accepts_loss_kwargs = False\n\n\n"


@dataclass(frozen=True)
class Plant:
    name: str
    check: str  # the catalog check that protects the fix
    package: str
    version: str
    path: str
    source: str
    edits: tuple[tuple[str, str], ...]
    breaks: str | None  # a fragment of the drift the check must report; None: harmless
    others: tuple[tuple[str, str], ...] = ()  # other files the check reads, as released
    returns: bool = False  # issue 11's class 3 (which branch returns what), else class 2


PLANTS = (
    # -- class 2: the value reaches its use, nothing undoes it ---------------------------
    Plant(
        "a second division on another branch",
        "test_training_step_divides_unless_model_accepts_loss_kwargs",
        "transformers", "5.3.0", TRAINER, STEP_5_3_0,
        ((
            "                loss = loss / self.current_gradient_accumulation_steps\n",
            "                loss = loss / self.current_gradient_accumulation_steps\n"
            "            elif self.args.average_tokens_across_devices:\n"
            "                loss = loss / self.args.gradient_accumulation_steps\n",
        ),),
        "changes loss by current_gradient_accumulation_steps or gradient_accumulation_steps "
        "more than once",
    ),
    Plant(
        "the multi-GPU mean moved after the division",
        "test_training_step_divides_unless_model_accepts_loss_kwargs",
        "transformers", "5.3.0", TRAINER, STEP_5_3_0,
        (
            ("            if self.args.n_gpu > 1:\n"
             "                loss = loss.mean()  # mean() to average on multi-gpu parallel training\n", ""),
            ("            if self.accelerator.distributed_type",
             "            if self.args.n_gpu > 1:\n                loss = loss.mean()\n\n"
             "            if self.accelerator.distributed_type"),
        ),
        None,
    ),
    Plant(
        "kwargs built but never passed into the model call",
        "test_compute_loss_passes_num_items_in_kwargs",
        "transformers", "5.3.0", TRAINER, STEP_5_3_0,
        (("            inputs = {**inputs, **kwargs}\n", ""),),
        "kwargs['num_items_in_batch'] = num_items_in_batch under `self.model_accepts_loss_kwargs` "
        "and `num_items_in_batch is not None` never reaches model",
    ),
    Plant(
        "num_items_in_batch replaced before it reaches the model call",
        "test_compute_loss_passes_num_items_in_kwargs",
        "transformers", "5.3.0", TRAINER, STEP_5_3_0,
        (("        if self.model_accepts_loss_kwargs:\n            kwargs = {}\n",
          "        if self.model_accepts_loss_kwargs:\n            kwargs = {}\n"
          "            if self.args.past_index >= 0:\n                num_items_in_batch = None\n"),),
        "the num_items_in_batch that",
    ),
    Plant(
        "the count moved under a new guard",
        "test_num_items_counts_unshifted_labels",
        "transformers", "5.3.0", TRAINER, STEP_5_3_0,
        (("        if count_num_items_in_batch:\n",
          "        if count_num_items_in_batch and self.args.average_tokens_across_devices:\n"),),
        "now runs under `count_num_items_in_batch and self.args.average_tokens_across_devices`",
    ),
    Plant(
        "the count replaced before it is returned",
        "test_num_items_counts_unshifted_labels",
        "transformers", "5.3.0", TRAINER, STEP_5_3_0,
        (("        return num_items_in_batch\n",
          "        if self.args.include_num_input_tokens_seen:\n            num_items_in_batch = None\n"
          "        return num_items_in_batch\n"),),
        "may be replaced before it reaches `return num_items_in_batch`",
    ),
    Plant(
        "num_items_in_batch reset before super().compute_loss",
        "test_sft_compute_loss_hands_num_items_in_batch_to_trainer",
        "trl", "0.24.0", SFT, SFT_0_24_0,
        (("        inputs[\"use_cache\"] = False\n",
          "        inputs[\"use_cache\"] = False\n        if self.args.use_liger_kernel:\n"
          "            num_items_in_batch = None  # liger normalises by itself\n"),),
        "may be replaced on the way: line 10: num_items_in_batch = None under "
        "`self.args.use_liger_kernel`",
    ),
    Plant(
        "num_items_in_batch moved to the device before super().compute_loss",
        "test_sft_compute_loss_hands_num_items_in_batch_to_trainer",
        "trl", "0.24.0", SFT, SFT_0_24_0,
        (("        inputs[\"use_cache\"] = False\n",
          "        inputs[\"use_cache\"] = False\n        if torch.is_tensor(num_items_in_batch):\n"
          "            num_items_in_batch = num_items_in_batch.to(self.accelerator.device)\n"),),
        None,
    ),
    Plant(
        "GRPOTrainer disables the loss kwargs through a module-level helper",
        "test_grpo_trainer_disables_loss_kwargs",
        "trl", "0.24.0", GRPO, GRPO_0_24_0,
        (
            ("        self.model_accepts_loss_kwargs = False\n",
             "        _scale_loss_for_accumulation(self)\n"),
            ("class GRPOTrainer", HELPER + "class GRPOTrainer"),
        ),
        None,
    ),
    Plant(
        "GRPOTrainer's helper sets the flag before super().__init__",
        "test_grpo_trainer_disables_loss_kwargs",
        "trl", "0.24.0", GRPO, GRPO_0_24_0,
        (
            ("        self.model_accepts_loss_kwargs = False\n", ""),
            ("        super().__init__(", "        _scale_loss_for_accumulation(self)\n"
             "        super().__init__("),
            ("class GRPOTrainer", HELPER + "class GRPOTrainer"),
        ),
        "only before it calls super().__init__",
    ),
    Plant(
        "SFTTrainer disables the loss kwargs through a module-level helper",
        "test_sft_trainer_never_sets_model_accepts_loss_kwargs",
        "trl", "1.10.0", SFT, SFT_1_10_0,
        (
            ("        )\n\n        # Initialize", "        )\n        _scale_loss_for_accumulation(self)\n\n"
             "        # Initialize"),
            ("def dft_loss", HELPER + "def dft_loss"),
        ),
        "in a module-level helper it calls there",
    ),
    # -- class 3: which branch returns what -------------------------------------------
    Plant(
        "get_batch_samples' branches swapped",
        "test_training_step_divides_when_no_items_were_counted",
        "transformers", "4.48.0", TRAINER, SAMPLES_4_48_0,
        (("        if not self.model_accepts_loss_kwargs:\n",
          "        if self.model_accepts_loss_kwargs:\n"),),
        "no longer returns (batch_samples, None) exactly when `not self.model_accepts_loss_kwargs`",
        returns=True,
    ),
    Plant(
        "get_batch_samples written the other way round",
        "test_training_step_divides_when_no_items_were_counted",
        "transformers", "4.48.0", TRAINER, SAMPLES_4_48_0,
        ((_COUNTING, "        if self.model_accepts_loss_kwargs:\n"
          + textwrap.indent(_COUNTING.split("\n\n", 1)[1], "    ")
          + "        return batch_samples, None\n"),),
        None,
        returns=True,
    ),
    Plant(
        "unwrap_peft_model's early return inverted",
        "test_init_unwraps_peft_with_the_helper",
        "transformers", "5.2.0", TRAINER_UTILS, UNWRAP_5_2_0,
        (("    if not _is_peft_model(model):\n", "    if _is_peft_model(model):\n"),),
        "no longer returns model exactly when `not _is_peft_model(model)`",
        ((TRAINER, INIT_5_2_0),),
        returns=True,
    ),
    Plant(
        "unwrap_peft_model with the PEFT case first",
        "test_init_unwraps_peft_with_the_helper",
        "transformers", "5.2.0", TRAINER_UTILS, UNWRAP_5_2_0,
        (
            ("    if not _is_peft_model(model):\n        return model\n    if hasattr",
             "    if _is_peft_model(model):\n        if hasattr"),
            ("        return model.get_base_model()\n    elif", "            return model.get_base_model()\n        elif"),
            ("        # PeftMixedModel do not provide a `get_base_model` method\n        return model.base_model.model\n    else:\n        raise",
             "            return model.base_model.model\n        else:\n            raise"),
            ("safely from this PEFT wrapper.\")\n", "safely from this PEFT wrapper.\")\n    return model\n"),
        ),
        None,
        ((TRAINER, INIT_5_2_0),),
        returns=True,
    ),
    Plant(
        "the PEFT unwrap asked after accepts_loss_kwargs was read",
        "test_init_unwraps_peft_with_the_helper",
        "transformers", "5.2.0", TRAINER, INIT_5_2_0,
        (
            ("        unwrapped_model = unwrap_peft_model(self.accelerator.unwrap_model(model))\n\n",
             "        unwrapped_model = self.accelerator.unwrap_model(model)\n\n"),
            ("            )\n", "            )\n"
             "        unwrapped_model = unwrap_peft_model(self.accelerator.unwrap_model(model))\n"),
        ),
        "unwrapped_model = unwrap_peft_model(self.accelerator.unwrap_model(model)) never "
        "reaches hasattr",
        ((TRAINER_UTILS, UNWRAP_5_2_0),),
    ),
    Plant(
        "get_base_model's branches swapped",
        "test_get_base_model_returns_the_transformers_model",
        "peft", "0.19.0", PEFT_MODEL, PEFT,
        (("return self.base_model if self.active_peft_config.is_prompt_learning else "
          "self.base_model.model", "return self.base_model.model if "
          "self.active_peft_config.is_prompt_learning else self.base_model"),),
        "self.base_model.model when `self.active_peft_config.is_prompt_learning`",
        returns=True,
    ),
    Plant(
        "get_base_model as if/return statements",
        "test_get_base_model_returns_the_transformers_model",
        "peft", "0.21.2", PEFT_MODEL, PEFT,
        (("        return self.base_model if self.active_peft_config.is_prompt_learning else "
          "self.base_model.model", "        if self.active_peft_config.is_prompt_learning:\n"
          "            return self.base_model\n        return self.base_model.model"),),
        None,
        returns=True,
    ),
)  # fmt: skip


@pytest.fixture(scope="module")
def catalog(request):
    """The catalog's check modules. They mark themselves for canary runs, whose markers a
    plain unit-test session does not declare: declared here before importing them."""
    for marker in ("upstream(package): the upstream package a check module covers",
                   "canary_check(spec): a catalog check"):  # fmt: skip
        request.config.addinivalue_line("markers", marker)
    return [
        importlib.import_module(f"canary.checks.test_{package}")
        for package in ("transformers", "trl", "peft")
    ]


def _check(catalog, name: str):
    for module in catalog:
        found = getattr(module, name, None)
        if found is not None:
            return found
        for table in vars(module).values():
            checks = dict(table.checks()) if hasattr(table, "checks") else {}
            if name in checks:
                return checks[name]
    raise LookupError(name)


def _run(catalog, plant: Plant, source: str) -> str | None:
    """The drift the plant's check reports on ``source``, or None when it passes."""
    origin = f"{plant.package} {plant.version}"
    snapshot = Snapshot(
        case=Case(plant.package, plant.version, "local"),
        version=Version(plant.version),
        modules={
            path: parse_module(text, path=path, origin=origin)
            for path, text in ((plant.path, source), *plant.others)
        },
    )
    try:
        _check(catalog, plant.check)(upstream=snapshot)
    except CheckDrift as exc:
        return str(exc)
    return None


def _planted(plant: Plant) -> str:
    source = plant.source
    for old, new in plant.edits:
        assert source.count(old) == 1, f"{plant.name}: the snippet no longer has {old!r}"
        source = source.replace(old, new)
    return source


@pytest.mark.parametrize("plant", PLANTS, ids=[p.name for p in PLANTS])
def test_the_released_snippet_passes_its_check(catalog, plant):
    assert _run(catalog, plant, plant.source) is None


@pytest.mark.parametrize("plant", PLANTS, ids=[p.name for p in PLANTS])
def test_a_planted_change_fails_its_check_only_when_it_breaks_the_fix(catalog, plant):
    drift = _run(catalog, plant, _planted(plant))
    if plant.breaks is None:
        assert drift is None, f"harmless plant {plant.name!r} raised drift:\n{drift}"
        return
    assert drift is not None, f"breaking plant {plant.name!r} stayed green"
    fix = _check(catalog, plant.check).pytestmark[0].args[0].fix
    assert f"breaks the fix '{fix}'" in drift
    assert plant.breaks in drift, drift


def test_each_class_has_a_breaking_and_a_harmless_plant():
    for returns in (False, True):
        assert {p.breaks is None for p in PLANTS if p.returns is returns} == {False, True}
