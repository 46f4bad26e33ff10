"""TRL SFTTrainer + LoRA: TRL's default loss, this project's chunked loss and TRL's own
``chunked_nll`` (where the installed TRL has it) give the same losses step by step."""

from __future__ import annotations

import importlib.util
import inspect
import random
from typing import Any

import pytest
import torch
from packaging.specifiers import SpecifierSet

from canary.fixes.chunked_loss import is_chunked_loss_forward, patch_chunked_loss
from canary.fixes.trainer_hooks import apply_to_trainer
from canary.runtime.models import WORDS, tiny_causal_lm

trl = pytest.importorskip("trl")
peft = pytest.importorskip("peft")
datasets = pytest.importorskip("datasets")
transformers = pytest.importorskip("transformers")
# SFT with the project's chunked loss and with trl's own, against the default: all behaviour.
pytestmark = pytest.mark.behaviour

TOL = 1e-5

# trl 1.15.0's SFTTrainer computes every loss through its fused LM head, whose kernel
# (trl/kernels) needs Triton: without it trainer/utils.py binds `_ChunkedLogProbFunction =
# None` and training raises AttributeError (CPU and macOS users cannot train). 1.16.0 gives
# the kernel a torch path. Found by the sweep; there it checks this outcome instead.
FUSED_HEAD_NEEDS_TRITON = SpecifierSet("==1.15.0")


def fused_head_unavailable() -> bool:
    """trl's SFT loss goes through a fused LM head whose kernel this install lacks."""
    utils = trl.trainer.utils
    kernel = getattr(utils, "_ChunkedLogProbFunction", "absent")
    return hasattr(utils, "add_fused_lm_head") and kernel is None


def known_triton_only() -> bool:
    """The written-down outcome applies: a release known to need Triton, without it. A
    release outside the list with the same shape is not excused: its tests go red."""
    return fused_head_unavailable() and trl.__version__ in FUSED_HEAD_NEEDS_TRITON


class _Recording:
    """Mixin: the loss of every micro-batch, as training_step returns it."""

    def training_step(self, *args: Any, **kwargs: Any) -> torch.Tensor:
        loss = super().training_step(*args, **kwargs)  # type: ignore[misc]
        self.step_losses.append(float(loss))  # type: ignore[attr-defined]
        return loss


class RecordingSFT(_Recording, trl.SFTTrainer):
    pass


class ChunkedSFT(_Recording, trl.SFTTrainer):
    # TRL's compute_loss reads outputs.logits for its metrics (<= 1.3) or calls its own
    # fused head (>= 1.16); the chunked loss returns logits=None, so the loss comes from the
    # model's forward through Trainer.compute_loss (num_items_in_batch honoured).
    def compute_loss(
        self, model: Any, inputs: Any, return_outputs: bool = False, num_items_in_batch: Any = None
    ) -> Any:
        loss, outputs = transformers.Trainer.compute_loss(
            self, model, inputs, return_outputs=True, num_items_in_batch=num_items_in_batch
        )
        # Proof the chunked forward produced this loss: no logits, a scored-token count.
        self.chunked_calls += outputs.logits is None and outputs.num_valid_tokens is not None
        return (loss, outputs) if return_outputs else loss


# The SFTConfig field that truncates examples: max_seq_length in older TRL (0.12).
_MAX_LENGTH = (
    "max_length"
    if "max_length" in inspect.signature(trl.SFTConfig.__init__).parameters
    else "max_seq_length"
)


def trl_has_chunked_nll() -> bool:
    source = inspect.getsource(trl.trainer.sft_config) + inspect.getsource(trl.trainer.sft_trainer)
    return "chunked_nll" in source


def dataset() -> Any:
    rng = random.Random(5)
    texts = [" ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 40))) for _ in range(8)]
    return datasets.Dataset.from_dict({"text": texts})


def run(
    cls: type, tokenizer: Any, tmp_path: Any, *, chunked: bool = False, **config: Any
) -> dict[str, Any]:
    args = trl.SFTConfig(
        output_dir=str(tmp_path / cls.__name__ / str(config)),
        **{_MAX_LENGTH: 64},
        per_device_train_batch_size=2,
        gradient_accumulation_steps=2,
        max_steps=2,
        learning_rate=0.5,
        optim="sgd",
        lr_scheduler_type="constant",
        max_grad_norm=1e9,
        logging_steps=1,
        save_strategy="no",
        report_to=[],
        seed=11,
        bf16=False,
        fp16=False,
        use_cpu=True,
        packing=False,
        dataloader_num_workers=0,
        disable_tqdm=True,
        **config,
    )
    torch.manual_seed(0)
    lora = peft.LoraConfig(
        r=4, lora_alpha=8, lora_dropout=0.0, target_modules=["q_proj", "v_proj"],
        task_type="CAUSAL_LM",
    )  # fmt: skip
    trainer = cls(
        model=tiny_causal_lm("llama", seed=0),
        args=args,
        train_dataset=dataset(),
        processing_class=tokenizer,
        peft_config=lora,
    )
    trainer.step_losses = []
    trainer.chunked_calls = 0
    if chunked:
        patch_chunked_loss(trainer.model, chunk_size=16)
        assert is_chunked_loss_forward(trainer.model.get_base_model())
        # The model changed after construction: apply the Trainer-level fixes again.
        assert apply_to_trainer(trainer)["accepts_loss_kwargs"] is True
    assert trainer.model_accepts_loss_kwargs is True
    trainer.train()
    adapters = {
        n: p.detach().clone() for n, p in trainer.model.named_parameters() if p.requires_grad
    }
    return {"losses": trainer.step_losses, "adapters": adapters, "chunked": trainer.chunked_calls}


def assert_same(a: dict[str, Any], b: dict[str, Any]) -> None:
    assert len(a["losses"]) == len(b["losses"]) == 4  # 2 steps x 2 micro-batches
    for x, y in zip(a["losses"], b["losses"], strict=True):
        assert abs(x - y) <= TOL * abs(x), (a["losses"], b["losses"])
    assert a["adapters"].keys() == b["adapters"].keys()
    for name, w in a["adapters"].items():
        assert float((w - b["adapters"][name]).norm() / w.norm()) < TOL, name


@pytest.fixture(scope="module")
def default_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    from canary.fixes.trainer_hooks import trainer_hooks
    from canary.runtime.models import tiny_tokenizer

    if known_triton_only():
        pytest.skip(f"trl {trl.__version__}'s SFTTrainer needs Triton (FUSED_HEAD_NEEDS_TRITON)")
    with trainer_hooks():
        return run(RecordingSFT, tiny_tokenizer(), tmp_path_factory.mktemp("sft"))


def test_sft_without_triton_fails_as_written_down(tokenizer: Any, tmp_path: Any) -> None:
    if not known_triton_only():
        pytest.skip(f"trl {trl.__version__} here trains without Triton")
    assert importlib.util.find_spec("triton") is None
    with pytest.raises(AttributeError, match="apply"):
        run(RecordingSFT, tokenizer, tmp_path)


def test_default_run_trains(default_run: dict[str, Any]) -> None:
    losses = default_run["losses"]
    assert all(torch.isfinite(torch.tensor(losses)))
    assert len(set(losses)) == 4
    assert any("lora_B" in n and w.abs().sum() > 0 for n, w in default_run["adapters"].items())


def test_project_chunked_loss_matches_default(
    default_run: dict[str, Any], tokenizer: Any, tmp_path: Any, hooks: None
) -> None:
    ours = run(ChunkedSFT, tokenizer, tmp_path, chunked=True)
    assert ours["chunked"] == 4
    assert_same(default_run, ours)


def test_trl_chunked_nll_matches_default(
    default_run: dict[str, Any], tokenizer: Any, tmp_path: Any, hooks: None
) -> None:
    if not trl_has_chunked_nll():
        pytest.skip(f"trl {trl.__version__} has no loss_type='chunked_nll'")
    assert_same(default_run, run(RecordingSFT, tokenizer, tmp_path, loss_type="chunked_nll"))
