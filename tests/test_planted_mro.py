# ruff: noqa: E501  (the snippets keep upstream's own long lines)
"""Planted upstream changes, issue 11's class 4b: a method or a flag that moves to a base
class or a mixin in another file of the same package.

Each case is a small trl tree built from trl 1.16.0's own code (``_BaseTrainer`` from
trl/trainer/base_trainer.py, ``SFTTrainer`` and the body of its ``compute_loss`` from
trl/trainer/sft_trainer.py, trimmed), read through the workspace like a ``--canary-local``
tree and run through the catalog check that protects the fix. A harmless move (the method
is still inherited, unchanged) stays green; a breaking one (a mixin now in SFTTrainer's
MRO sets what Trainer's detection must decide) fails, naming the fix and the mixin. Before
the static MRO, the catalog read SFTTrainer's own body only: it raised drift on the
harmless moves and missed the breaking ones.
"""

from __future__ import annotations

import importlib
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from canary.errors import CheckDrift
from canary.sources.local import LocalSource
from canary.workspace import Case, FetchPolicy, Workspace

SFT = "trl/trainer/sft_trainer.py"
MIXINS = "trl/trainer/mixins.py"

BASE_TRAINER = """
import transformers
from packaging.version import Version
from transformers import Trainer


class _BaseTrainer(Trainer):
    # Whether `compute_loss` already scales the loss for gradient accumulation, see `Trainer.loss_is_scaled_for_ga`
    loss_is_scaled_for_ga = None

    _tag_names = []
    _name = "Base"

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        # `Trainer.loss_is_scaled_for_ga` requires transformers 5.19; older versions only read these two attributes
        if Version(transformers.__version__) < Version("5.19.0") and self.loss_is_scaled_for_ga is not None:
            self.model_accepts_loss_kwargs = False
            if self.loss_is_scaled_for_ga:
                self.compute_loss_func = "non-None value to disable scaling"
        self._send_telemetry()
"""

COMPUTE_LOSS = """
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        mode = "train" if self.model.training else "eval"

        # If not set, defaults from model config and may warn since cache isn't compatible with gradient checkpointing
        inputs["use_cache"] = False
        parallelism_config = self.accelerator.parallelism_config
        if parallelism_config is not None and parallelism_config.sp_enabled and self.model.training:
            # Ulysses sequence parallelism reduces the model's own `loss` across ranks
            loss, outputs = super().compute_loss(
                model,
                {**inputs, "fused_lm_head": True},
                return_outputs=True,
                num_items_in_batch=num_items_in_batch,
            )
        else:
            outputs = model(**inputs, fused_lm_head=True)
            per_token_loss = -outputs.log_probs  # zero on ignored positions
            num_tokens = outputs.label_mask.sum() if num_items_in_batch is None else num_items_in_batch
            loss = per_token_loss.sum() / torch.as_tensor(num_tokens).clamp(min=1)
        return (loss, outputs) if return_outputs else loss
"""

SFT_HEAD = """
import torch

from .base_trainer import _BaseTrainer


class SFTTrainer(_BaseTrainer):
    _tag_names = ["trl", "sft"]
    _name = "SFT"

    def __init__(self, model, args=None, data_collator=None, train_dataset=None, **kwargs):
        super().__init__(model=model, args=args, data_collator=data_collator, train_dataset=train_dataset, **kwargs)
"""


@dataclass(frozen=True)
class Plant:
    name: str
    check: str
    sft: str  # trl/trainer/sft_trainer.py as planted
    others: dict[str, str] = field(default_factory=dict)  # more files of the tree
    breaks: str | None = None  # what the drift must say; None: a harmless move


RELEASED = SFT_HEAD + COMPUTE_LOSS


def _mixin_sft(import_line: str, bases: str) -> str:
    return SFT_HEAD.replace(
        "from .base_trainer import _BaseTrainer\n",
        f"from .base_trainer import _BaseTrainer\n{import_line}\n",
    ).replace("class SFTTrainer(_BaseTrainer):", f"class SFTTrainer({bases}):")


LOSS_MIXIN = "import torch\n\n\nclass _SFTLossMixin:\n" + COMPUTE_LOSS

PLANTS = (
    Plant(
        "compute_loss moved to a mixin in another file",
        "test_sft_compute_loss_hands_num_items_in_batch_to_trainer",
        _mixin_sft("from .mixins import _SFTLossMixin", "_SFTLossMixin, _BaseTrainer"),
        {MIXINS: LOSS_MIXIN},
    ),
    Plant(
        "compute_loss moved to a mixin imported absolutely",
        "test_sft_compute_loss_hands_num_items_in_batch_to_trainer",
        _mixin_sft("from trl.trainer.mixins import _SFTLossMixin", "_SFTLossMixin, _BaseTrainer"),
        {MIXINS: LOSS_MIXIN},
    ),
    Plant(
        "a mixin sets model_accepts_loss_kwargs",
        "test_sft_trainer_never_sets_model_accepts_loss_kwargs",
        _mixin_sft("from .mixins import _PaddingFreeMixin", "_PaddingFreeMixin, _BaseTrainer") + COMPUTE_LOSS,
        {
            MIXINS: textwrap.dedent(
                """
                class _PaddingFreeMixin:
                    def __init__(self, *args, **kwargs):
                        super().__init__(*args, **kwargs)
                        # padding-free batches carry their own token count
                        self.model_accepts_loss_kwargs = False
                """
            )
        },
        breaks="_PaddingFreeMixin",
    ),
    Plant(
        "a mixin declares the loss scaled for accumulation",
        "test_sft_trainer_leaves_loss_is_scaled_for_ga_unset",
        _mixin_sft("from .mixins import _ScaledLossMixin", "_ScaledLossMixin, _BaseTrainer") + COMPUTE_LOSS,
        {MIXINS: "class _ScaledLossMixin:\n    loss_is_scaled_for_ga = True\n"},
        breaks="_ScaledLossMixin",
    ),
)  # fmt: skip


@pytest.fixture(scope="module")
def catalog(request):
    """The trl check module. It marks itself for canary runs, whose markers a plain
    unit-test session does not declare: declared here before importing it."""
    for marker in ("upstream(package): the upstream package a check module covers",
                   "canary_check(spec): a catalog check"):  # fmt: skip
        request.config.addinivalue_line("markers", marker)
    return importlib.import_module("canary.checks.test_trl")


def _run(catalog, tmp_path: Path, plant: Plant, sft: str) -> str | None:
    """The drift the plant's check reports on a trl 1.16.0 tree whose sft_trainer.py is
    ``sft``, read as a ``--canary-local`` tree is; None when it passes."""
    files = {
        "trl/__init__.py": "",
        "trl/trainer/__init__.py": "",
        "trl/trainer/base_trainer.py": BASE_TRAINER,
        SFT: sft,
        **plant.others,
    }
    for path, text in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    source = LocalSource("trl", tmp_path, version="1.16.0")
    workspace = Workspace(lambda case: source, None, FetchPolicy())
    check = getattr(catalog, plant.check)
    spec = check.pytestmark[0].args[0]
    try:
        upstream = workspace.snapshot(
            Case("trl", "1.16.0", "local"), spec.reads, inherits=spec.inherits
        )
        check(upstream=upstream)
    except CheckDrift as exc:
        return str(exc)
    finally:
        workspace.close()
    return None


@pytest.mark.parametrize("plant", PLANTS, ids=[p.name for p in PLANTS])
def test_the_released_shape_passes_its_check(catalog, tmp_path, plant):
    assert _run(catalog, tmp_path, plant, RELEASED) is None


@pytest.mark.parametrize("plant", PLANTS, ids=[p.name for p in PLANTS])
def test_a_move_along_the_mro_fails_its_check_only_when_it_breaks_the_fix(catalog, tmp_path, plant):
    drift = _run(catalog, tmp_path, plant, plant.sft)
    if plant.breaks is None:
        assert drift is None, f"harmless plant {plant.name!r} raised drift:\n{drift}"
        return
    assert drift is not None, f"breaking plant {plant.name!r} stayed green"
    fix = getattr(catalog, plant.check).pytestmark[0].args[0].fix
    assert f"breaks the fix '{fix}'" in drift
    assert plant.breaks in drift, drift


def test_there_are_breaking_and_harmless_plants():
    assert {p.breaks is None for p in PLANTS} == {True, False}
