"""Chunked NLL loss against the model's own dense loss: same numbers, no full logits."""

from __future__ import annotations

from typing import Any

import pytest
import torch

from canary.fixes.chunked_loss import (
    LmHeadAdapterError,
    chunked_cross_entropy,
    is_chunked_loss_forward,
    patch_chunked_loss,
)
from canary.runtime.models import VOCAB, missing_family, tiny_causal_lm

peft = pytest.importorskip("peft")

TOL = 1e-5  # float32 relative difference


def make_batch(lengths: list[int], *, seed: int = 1, mask_prompt: bool = True) -> dict[str, Any]:
    """Right-padded variable-length batch; rows alternate masked/unmasked prompts."""
    gen = torch.Generator().manual_seed(seed)
    width = max(lengths)
    input_ids = torch.zeros(len(lengths), width, dtype=torch.long)
    attention_mask = torch.zeros_like(input_ids)
    for row, n in enumerate(lengths):
        input_ids[row, :n] = torch.randint(7, VOCAB, (n,), generator=gen)
        attention_mask[row, :n] = 1
    labels = input_ids.masked_fill(attention_mask == 0, -100)
    if mask_prompt:
        labels[::2, :3] = -100  # even rows: a 3-token prompt is not scored
    return {"input_ids": input_ids, "attention_mask": attention_mask, "labels": labels}


def rel(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.detach().double(), b.detach().double()
    return float((a - b).norm() / a.norm().clamp_min(1e-30))


def build(arch: str, peft_config: Any | None) -> torch.nn.Module:
    model = tiny_causal_lm(arch, seed=0)
    if peft_config is not None:
        torch.manual_seed(1)  # adapter init
        model = peft.get_peft_model(model, peft_config)
    return model


def loss_and_grads(model: torch.nn.Module, batch: dict[str, Any], **kw: Any):
    model.zero_grad(set_to_none=True)
    out = model(**batch, **kw)
    out.loss.backward()
    grads = {n: p.grad for n, p in model.named_parameters() if p.requires_grad}
    return out, grads


def lora(**kw: Any) -> Any:
    # init_lora_weights=False: B is random, so lora_A gets a non-zero gradient to compare.
    return peft.LoraConfig(
        r=4, lora_alpha=8, lora_dropout=0.0, init_lora_weights=False, task_type="CAUSAL_LM", **kw
    )


PEFT_CASES = {
    "full": lambda: None,
    "lora": lambda: lora(target_modules=["q_proj", "v_proj", "down_proj"]),
    "lora_modules_to_save": lambda: lora(target_modules=["q_proj"], modules_to_save=["lm_head"]),
    "prompt_tuning": lambda: peft.PromptTuningConfig(task_type="CAUSAL_LM", num_virtual_tokens=5),
}


# The sweep runs one family per release with every PEFT case; the pin sets run them all.
@pytest.mark.parametrize(
    "arch", [pytest.param("llama", marks=pytest.mark.behaviour), "qwen3", "gemma2", "cohere"]
)
@pytest.mark.parametrize("case", list(PEFT_CASES))
def test_chunked_matches_dense(arch: str, case: str) -> None:
    if reason := missing_family(arch):
        pytest.skip(reason)
    batch = make_batch([11, 23, 7, 30])
    dense = build(arch, PEFT_CASES[case]())
    chunked = build(arch, PEFT_CASES[case]())
    handle = patch_chunked_loss(chunked, chunk_size=13)  # several chunks, ragged last one
    assert is_chunked_loss_forward(handle.model)

    d_out, d_grads = loss_and_grads(dense, batch)
    c_out, c_grads = loss_and_grads(chunked, batch)
    assert c_out.logits is None
    assert rel(d_out.loss, c_out.loss) < TOL, (d_out.loss, c_out.loss)
    assert d_grads.keys() == c_grads.keys()
    assert c_grads
    for name, grad in c_grads.items():
        assert grad is not None, f"no gradient reached {name}"
        assert grad.abs().sum() > 0, f"zero gradient at {name}"
        assert rel(d_grads[name], grad) < TOL, name

    # The count is of the labels actually scored (virtual tokens add ignored positions, and
    # the last virtual token predicts the first real label).
    labels = batch["labels"]
    scored = labels if case == "prompt_tuning" else labels[:, 1:]
    assert int(c_out.num_valid_tokens) == int((scored != -100).sum())


@pytest.mark.parametrize("arch", ["gemma2", "cohere"])
def test_logit_transform_is_needed(arch: str) -> None:
    """Dropping the softcap / logit scale changes the loss: the match above is not vacuous."""
    model = tiny_causal_lm(arch, seed=0)
    batch = make_batch([9, 14])
    with torch.no_grad():
        hidden = model.model(
            input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]
        ).last_hidden_state
        dense = model(**batch).loss
        raw, _ = chunked_cross_entropy(hidden, model.lm_head.weight, batch["labels"])
    assert rel(dense, raw) > 1e-3


def test_num_items_in_batch_and_shift_labels() -> None:
    model = tiny_causal_lm("llama", seed=0)
    batch = make_batch([12, 5, 20])
    chunked = tiny_causal_lm("llama", seed=0)
    patch_chunked_loss(chunked, chunk_size=8)
    n = torch.tensor(97)
    with torch.no_grad():
        dense = model(**batch, num_items_in_batch=n).loss
        ours = chunked(**batch, num_items_in_batch=n).loss
        assert rel(dense, ours) < TOL
        hidden = model.model(
            input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]
        ).last_hidden_state
        shifted = torch.nn.functional.pad(batch["labels"], (0, 1), value=-100)[:, 1:]
        a, na = chunked_cross_entropy(hidden, model.lm_head.weight, batch["labels"], chunk_size=3)
        b, nb = chunked_cross_entropy(
            hidden, model.lm_head.weight, None, shift_labels=shifted, chunk_size=1000
        )
        logits = model.lm_head(hidden).float()
        ref = torch.nn.functional.cross_entropy(
            logits.reshape(-1, VOCAB), shifted.reshape(-1), ignore_index=-100
        )
    assert rel(ref, a) < TOL
    assert rel(ref, b) < TOL
    assert int(na) == int(nb) == int((shifted != -100).sum())
    # ignore_index is honoured: another sentinel, the same loss.
    sentinel = shifted.masked_fill(shifted == -100, -1)
    c, _ = chunked_cross_entropy(
        hidden, model.lm_head.weight, None, shift_labels=sentinel, ignore_index=-1
    )
    assert rel(ref, c) < TOL


def test_fully_masked_batch_is_zero_and_backpropagates() -> None:
    model = tiny_causal_lm("llama", seed=0)
    patch_chunked_loss(model)
    batch = make_batch([6, 6])
    batch["labels"][:] = -100
    out = model(**batch)
    out.loss.backward()
    assert float(out.loss) == 0.0
    assert int(out.num_valid_tokens) == 0
    assert model.lm_head.weight.grad is not None


class _LargestVocabTensor(torch.utils._python_dispatch.TorchDispatchMode):
    """Records the largest tensor any op produces whose last dimension is the vocabulary."""

    def __init__(self, vocab: int) -> None:
        super().__init__()
        self.vocab, self.largest = vocab, 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in out if isinstance(out, (tuple, list)) else (out,):
            if isinstance(t, torch.Tensor) and t.dim() and t.shape[-1] == self.vocab:
                self.largest = max(self.largest, t.numel())
        return out


@pytest.mark.parametrize("patched", [False, True])
def test_never_materialises_full_logits(patched: bool) -> None:
    model = tiny_causal_lm("llama", seed=0)
    batch = make_batch([40, 40, 40, 40], mask_prompt=False)
    full = batch["input_ids"].numel() * VOCAB
    chunk = 16
    if patched:
        patch_chunked_loss(model, chunk_size=chunk)
    with _LargestVocabTensor(VOCAB) as rec:
        model(**batch).loss.backward()
    if patched:
        # forward and backward (recomputed chunk) never hold more than one chunk of logits;
        # lm_head.weight and its gradient are [vocab, hidden].
        assert rec.largest <= max(chunk * VOCAB, model.lm_head.weight.numel())
    else:
        assert rec.largest >= full  # the detector does see the dense logits


def test_peft_step_updates_adapter_only() -> None:
    model = build("llama", lora(target_modules=["q_proj", "v_proj"], modules_to_save=["lm_head"]))
    patch_chunked_loss(model, chunk_size=10)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    opt = torch.optim.SGD([p for p in model.parameters() if p.requires_grad], lr=0.5)
    model(**make_batch([15, 9, 21])).loss.backward()
    opt.step()
    changed = {n for n, p in model.named_parameters() if not torch.equal(before[n], p.detach())}
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    assert changed == trainable, sorted(changed ^ trainable)
    assert any("lora_" in n for n in changed)
    assert any("modules_to_save" in n for n in changed)


def test_lm_head_adapter_is_refused() -> None:
    model = build("llama", lora(target_modules=["q_proj", "lm_head"]))
    with pytest.raises(LmHeadAdapterError, match="lm_head"):
        patch_chunked_loss(model)
    assert not is_chunked_loss_forward(model.get_base_model())


def test_lm_head_adapter_added_after_patching_is_refused_at_forward() -> None:
    model = tiny_causal_lm("llama", seed=0)
    patch_chunked_loss(model)
    wrapped = peft.get_peft_model(model, lora(target_modules=["lm_head"]))
    with pytest.raises(LmHeadAdapterError):
        wrapped(**make_batch([8, 8]))


def test_handle_restores_and_labels_free_forward_is_stock() -> None:
    model = tiny_causal_lm("llama", seed=0)
    batch = make_batch([10, 4])
    handle = patch_chunked_loss(model)
    with torch.no_grad():
        out = model(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"])
    assert out.logits is not None
    assert out.logits.shape[-1] == VOCAB
    with pytest.raises(RuntimeError, match="already"):
        patch_chunked_loss(model)
    handle.remove()
    handle.remove()
    assert "forward" not in model.__dict__
    assert not is_chunked_loss_forward(model)
    assert model(**batch).logits is not None
