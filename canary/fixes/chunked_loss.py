"""Chunked NLL loss: the causal-LM training loss from hidden states, without full logits.

A dense causal-LM forward builds ``[batch, seq, vocab]`` logits (and keeps them, plus an
fp32 upcast, for backward). At a 151,936 vocabulary and 4,096 tokens that is the largest
tensor of the step. :func:`chunked_cross_entropy` projects only the positions that carry
a label, a chunk at a time, under ``torch.utils.checkpoint`` so backward recomputes each
chunk's logits instead of keeping them all.

:func:`patch_chunked_loss` swaps a model's ``forward`` (the base model under PEFT, so
prompt-learning adapters still inject their virtual tokens before it) for one that runs the
decoder, then this loss. The patched forward honours ``num_items_in_batch``, which is why
the accepts_loss_kwargs fix recognises it (:func:`is_chunked_loss_forward`) and tells
Trainer not to divide the loss again.

torch/transformers are imported inside functions: the static tier imports this package.
"""

from __future__ import annotations

import functools
import logging
import types
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import torch
    from torch import nn

logger = logging.getLogger("canary.fixes")

DEFAULT_CHUNK_SIZE = 1024
"""Valid (labelled) tokens per chunk: peak logits memory is ``chunk_size * vocab`` floats
(1,024 x 151,936 fp32 is 0.6 GB, against 2.5 GB per 4,096-token sequence dense)."""

_MARK = "__canary_chunked_loss__"


class LmHeadAdapterError(TypeError):
    """The lm_head is wrapped by a PEFT tuner layer; the chunked loss would drop its delta.

    The loss reads ``lm_head.weight`` directly, so a LoRA (or other tuner) on lm_head would
    contribute nothing to the logits and receive no gradient: training would silently be
    wrong, hence an error rather than a warning.
    """


def _chunk_nll(  # noqa: PLR0917 - checkpoint() hands the inputs over positionally
    hidden: torch.Tensor,
    weight: torch.Tensor,
    bias: torch.Tensor | None,
    labels: torch.Tensor,
    logit_scale: float | None,
    softcap: float | None,
) -> torch.Tensor:
    """Summed NLL of one chunk; logits exist only inside this call (recomputed in backward)."""
    import torch
    from torch.nn import functional

    # The matmul runs in the model's dtype, then upcasts, exactly like the dense forward +
    # ForCausalLMLoss; upcasting the weight instead would copy a vocab x hidden fp32 matrix.
    logits = functional.linear(hidden, weight, bias)
    if logit_scale is not None:
        logits = logits * logit_scale
    logits = logits.float()
    if softcap is not None:
        logits = torch.tanh(logits / softcap) * softcap
    return functional.cross_entropy(logits, labels, reduction="sum")


def chunked_cross_entropy(
    hidden: torch.Tensor,
    weight: torch.Tensor,
    labels: torch.Tensor | None,
    *,
    bias: torch.Tensor | None = None,
    num_items_in_batch: torch.Tensor | int | None = None,
    ignore_index: int = -100,
    shift_labels: torch.Tensor | None = None,
    chunk_size: int = DEFAULT_CHUNK_SIZE,
    logit_scale: float | None = None,
    softcap: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Next-token cross-entropy of ``hidden @ weight.T`` computed in chunks.

    Args:
        hidden: decoder output ``[batch, seq, hidden]`` (before lm_head).
        weight: lm_head weight ``[vocab, hidden]``; ``bias`` its optional bias.
        labels: ``[batch, seq]`` unshifted labels; shifted like transformers'
            ``ForCausalLMLoss`` (position ``i`` predicts ``labels[i + 1]``).
        num_items_in_batch: the token count of the whole accumulated batch (Trainer's
            gradient-accumulation-correct reduction: ``sum / num_items_in_batch``); ``None``
            means the mean over this call's valid tokens.
        ignore_index: label value that is not scored.
        shift_labels: already-aligned labels (context/sequence parallel); wins over labels.
        chunk_size: valid tokens per chunk.
        logit_scale: multiplies logits (Cohere ``logit_scale``).
        softcap: ``softcap * tanh(logits / softcap)`` (Gemma2/3 ``final_logit_softcapping``).

    Returns:
        ``(loss, num_valid_tokens)``; the count is of the labels actually scored, so it is
        right under prompt-learning PEFT, whose virtual tokens carry ignore_index labels.
    """
    import torch
    from torch.nn import functional
    from torch.utils.checkpoint import checkpoint

    if chunk_size < 1:
        raise ValueError(f"chunk_size must be >= 1, got {chunk_size}")
    if shift_labels is None:
        if labels is None:
            raise ValueError("chunked_cross_entropy needs labels or shift_labels")
        # Same alignment as ForCausalLMLoss: pad one ignore_index on the right, drop the first.
        shift_labels = functional.pad(labels, (0, 1), value=ignore_index)[..., 1:]
    if shift_labels.shape != hidden.shape[:-1]:
        raise ValueError(
            f"labels shape {tuple(shift_labels.shape)} does not match hidden states "
            f"{tuple(hidden.shape[:-1])}"
        )

    flat_labels = shift_labels.reshape(-1).to(hidden.device)
    valid = flat_labels != ignore_index
    flat_hidden = hidden.reshape(-1, hidden.size(-1))[valid]
    flat_labels = flat_labels[valid]
    n_valid = flat_labels.numel()
    num_valid_tokens = torch.tensor(n_valid, device=hidden.device, dtype=torch.long)

    if n_valid == 0:
        # Nothing to score (fully masked micro-batch): a zero that still reaches every input
        # so backward and distributed gradient sync see the parameters.
        loss = hidden.sum() * 0.0 + weight.sum() * 0.0
        if bias is not None:
            loss = loss + bias.sum() * 0.0
        return loss.float(), num_valid_tokens

    total = hidden.new_zeros((), dtype=torch.float32)
    for start in range(0, n_valid, chunk_size):
        total = total + checkpoint(
            _chunk_nll,
            flat_hidden[start : start + chunk_size],
            weight,
            bias,
            flat_labels[start : start + chunk_size],
            logit_scale,
            softcap,
            use_reentrant=False,
        )

    if num_items_in_batch is None:
        return total / n_valid, num_valid_tokens
    if isinstance(num_items_in_batch, torch.Tensor):
        num_items_in_batch = num_items_in_batch.to(total.device)
    return total / num_items_in_batch, num_valid_tokens


def _text_config(model: nn.Module) -> Any:
    config = model.config
    get_text_config = getattr(config, "get_text_config", None)
    return get_text_config() if callable(get_text_config) else config


def logit_transforms(model: nn.Module) -> tuple[float | None, float | None]:
    """``(logit_scale, softcap)`` the model's own forward applies to its logits."""
    config = _text_config(model)
    # Cohere keeps the scale on the module (copied from config.logit_scale at init).
    scale = getattr(model, "logit_scale", None)
    if not isinstance(scale, (int, float)):
        scale = getattr(config, "logit_scale", None)
    softcap = getattr(config, "final_logit_softcapping", None)
    scale = None if scale is None or float(scale) == 1.0 else float(scale)
    return scale, (None if softcap is None else float(softcap))


def _decoder(model: nn.Module) -> nn.Module:
    """The module that produces the final hidden states (everything but lm_head)."""
    base = getattr(model, "base_model", None)
    if base is not None and base is not model:
        return base
    # Pre-5.0 vision wrappers set base_model_prefix = "", so base_model is the model itself.
    inner = getattr(model, "model", None)
    if inner is None or inner is model:
        raise TypeError(
            f"chunked loss: cannot find the decoder of {type(model).__name__} "
            "(neither .base_model nor .model is a sub-module)"
        )
    return inner


def _lm_head(model: nn.Module) -> nn.Module:
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    if head is None:
        head = getattr(model, "lm_head", None)
    if head is None:
        raise TypeError(f"chunked loss: {type(model).__name__} has no lm_head")
    return head


def check_lm_head(model: nn.Module) -> None:
    """Raise :class:`LmHeadAdapterError` if lm_head is a PEFT tuner layer."""
    try:
        from peft.tuners.tuners_utils import BaseTunerLayer
    except ImportError:  # no peft, no tuner layers
        return
    head = _lm_head(model)
    if isinstance(head, BaseTunerLayer):
        raise LmHeadAdapterError(
            f"chunked loss: lm_head is wrapped by the PEFT tuner layer {type(head).__name__}; "
            "the loss reads lm_head.weight directly, so the adapter delta would be ignored and "
            "get no gradient. Remove lm_head from target_modules (modules_to_save is fine)."
        )


@functools.cache
def _output_class() -> type:
    from transformers.modeling_outputs import CausalLMOutputWithPast

    @dataclass
    class ChunkedLossOutput(CausalLMOutputWithPast):
        """CausalLMOutputWithPast with ``logits=None`` and the scored-token count."""

        num_valid_tokens: Any = None

    return ChunkedLossOutput


def is_chunked_loss_forward(module: object) -> bool:
    """True when ``module.forward`` is this project's chunked-loss forward."""
    forward = getattr(module, "forward", None)
    return bool(getattr(getattr(forward, "__func__", forward), _MARK, False))


@dataclass
class ChunkedLossHandle:
    """Undo token for :func:`patch_chunked_loss`."""

    model: Any
    previous: Any  # the instance-level forward that was there before, or None
    active: bool = True

    def remove(self) -> None:
        """Restore the model's previous forward (idempotent)."""
        if not self.active:
            return
        if self.previous is None:
            self.model.__dict__.pop("forward", None)
        else:
            self.model.forward = self.previous
        self.active = False


def patch_chunked_loss(model: nn.Module, chunk_size: int = DEFAULT_CHUNK_SIZE) -> ChunkedLossHandle:
    """Make ``model`` compute its training loss with :func:`chunked_cross_entropy`.

    Under PEFT the base model (``get_base_model()``) is patched, so LoRA layers inside the
    decoder and prompt-learning virtual tokens both still apply. With labels the patched
    forward returns ``logits=None`` and ``num_valid_tokens``; without labels (generation,
    label-free eval), or when a caller asks for upstream's own fused head, the original
    forward runs unchanged.

    Raises:
        LmHeadAdapterError: lm_head is a PEFT tuner layer.
        TypeError: the model has no separable decoder / lm_head.
    """
    target = model.get_base_model() if hasattr(model, "get_base_model") else model
    if is_chunked_loss_forward(target):
        raise RuntimeError(f"{type(target).__name__} already has the chunked-loss forward")
    check_lm_head(target)
    _decoder(target)  # fail now, not at the first step
    logit_scale, softcap = logit_transforms(target)
    previous = target.__dict__.get("forward")
    original_forward = target.forward

    def chunked_loss_forward(  # noqa: PLR0917 - positional order of HF forwards
        self: nn.Module,
        input_ids: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        labels: torch.Tensor | None = None,
        num_items_in_batch: torch.Tensor | int | None = None,
        shift_labels: torch.Tensor | None = None,
        **kwargs: Any,
    ) -> Any:
        if (labels is None and shift_labels is None) or kwargs.get("fused_lm_head"):
            # Logits are wanted (or upstream computes its own fused loss): stock path.
            if labels is not None:
                kwargs["labels"] = labels
            if shift_labels is not None:
                kwargs["shift_labels"] = shift_labels
            return original_forward(input_ids=input_ids, attention_mask=attention_mask, **kwargs)
        check_lm_head(self)  # an adapter may have been added to lm_head after patching
        # Arguments only the LM head stage understands; the decoder would reject them.
        for name in ("logits_to_keep", "num_logits_to_keep", "use_cache", "return_dict"):
            kwargs.pop(name, None)
        outputs = _decoder(self)(
            input_ids=input_ids, attention_mask=attention_mask, use_cache=False, **kwargs
        )
        hidden = outputs[0]
        head = _lm_head(self)
        loss, num_valid = chunked_cross_entropy(
            hidden,
            head.weight,
            labels,
            bias=getattr(head, "bias", None),
            num_items_in_batch=num_items_in_batch,
            shift_labels=shift_labels,
            chunk_size=chunk_size,
            logit_scale=logit_scale,
            softcap=softcap,
        )
        return _output_class()(
            loss=loss,
            logits=None,
            past_key_values=getattr(outputs, "past_key_values", None),
            hidden_states=getattr(outputs, "hidden_states", None),
            attentions=getattr(outputs, "attentions", None),
            num_valid_tokens=num_valid,
        )

    setattr(chunked_loss_forward, _MARK, True)
    target.forward = types.MethodType(chunked_loss_forward, target)
    logger.debug("chunked loss installed on %s (chunk_size=%d)", type(target).__name__, chunk_size)
    return ChunkedLossHandle(model=target, previous=previous)
