"""GPU tier: bf16, a Qwen3-shaped model at full vocabulary and 4,096-token sequences.

Measures peak memory and step time (forward + backward of the loss) of the chunked loss
against dense logits on the same weights in one run, reports them as ratios (printed, and
written as JSON to ``$CANARY_GPU_REPORT`` if set), and checks the chunked loss and its
gradients against dense in bf16 (relative difference < 1e-2), full fine-tune and LoRA.

Skipped without CUDA. ``CANARY_GPU_SMOKE=1`` runs the same code small on CPU (no memory
figures) so the tier can be exercised where no GPU is lent.
"""

from __future__ import annotations

import json
import os
import statistics
import time
from collections.abc import Iterator
from typing import Any

import pytest
import torch

from canary.fixes.chunked_loss import patch_chunked_loss
from canary.runtime.models import tiny_causal_lm

pytestmark = pytest.mark.gpu

SMOKE = os.environ.get("CANARY_GPU_SMOKE") == "1"
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
VOCAB = 512 if SMOKE else 151_936  # Qwen3's vocabulary
SEQ = 128 if SMOKE else 4096
CHUNK = 32 if SMOKE else 1024
# Qwen3-0.6B's shapes, two layers: the lm_head dominates as it does at full depth's end.
SHAPE: dict[str, Any] = {
    "hidden": 64 if SMOKE else 1024,
    "layers": 2,
    "intermediate_size": 128 if SMOKE else 3072,
    "num_attention_heads": 4 if SMOKE else 16,
    "num_key_value_heads": 2 if SMOKE else 8,
    "head_dim": 16 if SMOKE else 128,
    "max_position_embeddings": 40_960,
    "attn_implementation": "sdpa",
}
TOL = 1e-2  # bf16
ITERS = 2 if SMOKE else 5


def qwen3() -> torch.nn.Module:
    return tiny_causal_lm("qwen3", vocab=VOCAB, seed=0, dtype=torch.bfloat16, **SHAPE).to(DEVICE)


def batch() -> dict[str, torch.Tensor]:
    gen = torch.Generator().manual_seed(0)
    ids = torch.randint(10, VOCAB, (1, SEQ), generator=gen)
    labels = ids.clone()
    labels[:, : SEQ // 16] = -100  # an unscored prompt
    return {"input_ids": ids.to(DEVICE), "labels": labels.to(DEVICE)}


def sync() -> None:
    if DEVICE == "cuda":
        torch.cuda.synchronize()


def step(model: torch.nn.Module, inputs: dict[str, torch.Tensor]) -> torch.Tensor:
    model.zero_grad(set_to_none=True)
    loss = model(**inputs).loss
    loss.backward()
    return loss.detach()


def measure(model: torch.nn.Module, inputs: dict[str, torch.Tensor]) -> dict[str, float | None]:
    """Median step time and the peak memory one step adds over the resting model."""
    step(model, inputs)  # warm-up: kernels, allocator
    model.zero_grad(set_to_none=True)
    sync()
    peak = None
    if DEVICE == "cuda":
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()
        base = torch.cuda.memory_allocated()
    times = []
    for _ in range(ITERS):
        sync()
        start = time.perf_counter()
        step(model, inputs)
        sync()
        times.append(time.perf_counter() - start)
        if DEVICE == "cuda" and peak is None:
            peak = (torch.cuda.max_memory_allocated() - base) / 2**30
    model.zero_grad(set_to_none=True)
    return {"peak_gib": peak, "step_s": statistics.median(times)}


@pytest.fixture(scope="module")
def report() -> Iterator[dict[str, Any]]:
    import peft
    import transformers

    data: dict[str, Any] = {
        "device": torch.cuda.get_device_name() if DEVICE == "cuda" else "cpu (smoke)",
        "versions": {
            "torch": torch.__version__,
            "transformers": transformers.__version__,
            "peft": peft.__version__,
        },
        "shape": {"vocab": VOCAB, "seq": SEQ, "chunk": CHUNK, **SHAPE, "dtype": "bfloat16"},
    }
    yield data
    text = json.dumps(data, indent=2, sort_keys=True)
    print("\ncanary GPU tier report:\n" + text)
    path = os.environ.get("CANARY_GPU_REPORT")
    if path:
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text + "\n")


def rel(a: torch.Tensor, b: torch.Tensor) -> float:
    a, b = a.detach().float(), b.detach().float()
    return float((a - b).norm() / a.norm().clamp_min(1e-30))


def test_memory_and_speed_ratios(report: dict[str, Any]) -> None:
    model = qwen3()
    inputs = batch()
    dense = measure(model, inputs)
    handle = patch_chunked_loss(model, chunk_size=CHUNK)
    chunked = measure(model, inputs)
    handle.remove()
    report["dense"], report["chunked"] = dense, chunked
    report["step_time_ratio"] = chunked["step_s"] / dense["step_s"]
    if DEVICE == "cuda":
        report["peak_memory_ratio"] = chunked["peak_gib"] / dense["peak_gib"]
        # Dense holds bf16 logits, their fp32 upcast and the softmax for backward: several
        # GiB at this size; chunked holds one chunk of logits at a time.
        assert report["peak_memory_ratio"] < 0.6, report
        # Recomputing each chunk in backward costs one extra lm_head matmul, not a multiple.
        assert report["step_time_ratio"] < 2.5, report


@pytest.mark.parametrize("how", ["full", "lora"])
def test_bf16_matches_dense(how: str, report: dict[str, Any]) -> None:
    import peft

    model = qwen3()
    if how == "lora":
        torch.manual_seed(1)
        config = peft.LoraConfig(
            r=16, lora_alpha=32, lora_dropout=0.0, init_lora_weights=False,
            target_modules=["q_proj", "k_proj", "v_proj", "o_proj"], task_type="CAUSAL_LM",
        )  # fmt: skip
        model = peft.get_peft_model(model, config)
    inputs = batch()
    dense_loss = step(model, inputs)
    dense = {n: p.grad.clone() for n, p in model.named_parameters() if p.requires_grad}
    handle = patch_chunked_loss(model, chunk_size=CHUNK)
    chunked_loss = step(model, inputs)
    handle.remove()
    grads = {n: p.grad for n, p in model.named_parameters() if p.requires_grad}
    worst = max(rel(dense[n], g) for n, g in grads.items())
    report[f"bf16_{how}"] = {"loss_rel_diff": rel(dense_loss, chunked_loss), "grad_rel_diff": worst}
    assert torch.isfinite(chunked_loss)
    assert all(g is not None and g.abs().sum() > 0 for g in grads.values())
    assert rel(dense_loss, chunked_loss) < TOL, (dense_loss, chunked_loss)
    assert worst < TOL, report[f"bf16_{how}"]
