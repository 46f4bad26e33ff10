"""Tiny random-init models and tokenizers built from configs: nothing is downloaded.

Sizes keep the CPU tier fast (hidden 32, vocab a few hundred); the GPU tier asks for a
Qwen3-shaped config at full vocabulary through the same builders.
"""

from __future__ import annotations

import functools
import importlib
import inspect
from typing import Any

from canary.versions import Window

VOCAB = 320
HIDDEN = 32

WORDS = [
    "the", "a", "cat", "dog", "sat", "on", "mat", "ran", "to", "park", "and", "then", "slept",
    "is", "was", "very", "happy", "sad", "big", "small", "red", "blue", "green", "tree",
]  # fmt: skip

CHAT_TEMPLATE = (
    "{% for message in messages %}<|{{ message['role'] }}|> {{ message['content'] }} <|end|> "
    "{% endfor %}{% if add_generation_prompt %}<|assistant|> {% endif %}"
)


def tiny_tokenizer() -> Any:
    """A word-level ``PreTrainedTokenizerFast`` with pad/eos/bos and a chat template."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    specials = ["<pad>", "<unk>", "<s>", "</s>", "<|user|>", "<|assistant|>", "<|end|>"]
    vocab = {tok: i for i, tok in enumerate(specials + WORDS)}
    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        pad_token="<pad>",
        unk_token="<unk>",
        bos_token="<s>",
        eos_token="</s>",
    )
    tok.chat_template = CHAT_TEMPLATE
    return tok


def _text_kwargs(vocab: int, hidden: int, layers: int) -> dict[str, Any]:
    return {
        "vocab_size": vocab,
        "hidden_size": hidden,
        "intermediate_size": hidden * 2,
        "num_hidden_layers": layers,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": hidden // 4,
        "max_position_embeddings": 8192,
        "pad_token_id": 0,
        "bos_token_id": 2,
        "eos_token_id": 3,
        "tie_word_embeddings": False,
    }


CAUSAL_LMS: dict[str, tuple[str, str, dict[str, Any]]] = {
    # name: (config class, model class, extra config) — each family exercises a loss path.
    "llama": ("LlamaConfig", "LlamaForCausalLM", {}),
    "qwen3": ("Qwen3Config", "Qwen3ForCausalLM", {}),
    "gemma2": (
        "Gemma2Config",
        "Gemma2ForCausalLM",
        {"final_logit_softcapping": 1.0, "initializer_range": 0.2},
    ),
    "cohere": ("CohereConfig", "CohereForCausalLM", {"logit_scale": 4.0}),
}


def missing_family(arch: str) -> str | None:
    """Why the installed transformers cannot build family ``arch`` (Qwen3 arrived in 4.51),
    or None when it can: the tests skip with this reason."""
    import transformers

    config_name = CAUSAL_LMS[arch][0]
    if hasattr(transformers, config_name):
        return None
    return f"transformers {transformers.__version__} has no {config_name}"


def tiny_causal_lm(
    arch: str = "llama",
    *,
    vocab: int = VOCAB,
    hidden: int = HIDDEN,
    layers: int = 2,
    seed: int = 0,
    dtype: Any = None,
    **overrides: Any,
) -> Any:
    """A random-init causal LM of family ``arch`` (see :data:`CAUSAL_LMS`).

    Attention is eager unless ``attn_implementation`` says otherwise (the GPU tier uses
    sdpa: eager attention at 4,096 tokens would dwarf the logits being measured).
    """
    import torch
    import transformers

    config_name, model_name, extra = CAUSAL_LMS[arch]
    attn = overrides.pop("attn_implementation", "eager")
    kwargs = {**_text_kwargs(vocab, hidden, layers), **extra, **overrides}
    config = getattr(transformers, config_name)(**kwargs)
    config._attn_implementation = attn
    torch.manual_seed(seed)
    model = getattr(transformers, model_name)(config)
    if dtype is not None:
        model = model.to(dtype)
    return model


def _siglip_vision() -> dict[str, Any]:
    return {
        "hidden_size": 16,
        "intermediate_size": 32,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "image_size": 28,
        "patch_size": 14,
    }


def _gemma3() -> Any:
    from transformers import Gemma3Config

    return Gemma3Config(
        text_config={**_text_kwargs(VOCAB, HIDDEN, 1), "model_type": "gemma3_text"},
        vision_config=_siglip_vision(),
        mm_tokens_per_image=4,
        boi_token_index=VOCAB - 3,
        eoi_token_index=VOCAB - 2,
        image_token_index=VOCAB - 1,
    )


def _paligemma() -> Any:
    from transformers import PaliGemmaConfig

    return PaliGemmaConfig(
        text_config={**_text_kwargs(VOCAB, HIDDEN, 1), "model_type": "gemma"},
        vision_config={**_siglip_vision(), "projection_dim": HIDDEN},
        image_token_index=VOCAB - 1,
        projection_dim=HIDDEN,
        hidden_size=HIDDEN,
    )


def _qwen2_vl() -> Any:
    from transformers import Qwen2VLConfig

    text = {
        **_text_kwargs(VOCAB, HIDDEN, 1),
        "rope_scaling": {"type": "mrope", "mrope_section": [1, 1, 2]},
    }
    vision = {
        "depth": 1,
        "embed_dim": 16,
        "hidden_size": HIDDEN,
        "num_heads": 2,
        "mlp_ratio": 2,
        "patch_size": 14,
        "spatial_merge_size": 2,
        "temporal_patch_size": 2,
    }
    # Releases differ in where text fields live (top level in 4.x, text_config from 4.53):
    # give both where text_config is a parameter. Before, the config keeps a text_config
    # keyword as a plain dict, which generation later trips over ('dict' has no to_dict).
    nested = "text_config" in inspect.signature(Qwen2VLConfig.__init__).parameters
    return Qwen2VLConfig(
        **({"text_config": text} if nested else {}),
        vision_config=vision,
        image_token_id=VOCAB - 1,
        video_token_id=VOCAB - 2,
        vision_start_token_id=VOCAB - 3,
        **text,
    )


def _gemma3n() -> Any:
    from transformers import Gemma3nConfig

    text = {
        **_text_kwargs(VOCAB, HIDDEN, 2),
        "vocab_size_per_layer_input": VOCAB,
        "hidden_size_per_layer_input": 8,
        "laurel_rank": 4,
        "altup_num_inputs": 2,
        "num_kv_shared_layers": 0,
        "activation_sparsity_pattern": [0.0, 0.0],
        "layer_types": ["sliding_attention", "full_attention"],
        "intermediate_size": [HIDDEN * 2, HIDDEN * 2],
    }
    return Gemma3nConfig(
        text_config=text,
        vision_config={"hidden_size": 16, "vocab_size": 8, "vocab_offset": VOCAB},
        audio_config={
            "hidden_size": 16,
            "vocab_size": 8,
            "vocab_offset": VOCAB + 8,
            "conf_num_hidden_layers": 1,
            "conf_num_attention_heads": 2,
            "sscp_conv_channel_size": [8, 8],
        },
    )


VISION_WRAPPERS: dict[str, tuple[str, Any]] = {
    "Gemma3ForConditionalGeneration": ("transformers", _gemma3),
    "PaliGemmaForConditionalGeneration": ("transformers", _paligemma),
    "Qwen2VLForConditionalGeneration": ("transformers", _qwen2_vl),
    "Gemma3nForConditionalGeneration": ("transformers", _gemma3n),
}


FORWARDS_NUM_ITEMS_TO_LOSS: dict[str, Window | None] = {
    # The releases where the wrapper declares nothing itself and its forward passes its
    # **kwargs (Trainer's num_items_in_batch) to self.loss_function: the accepts_loss_kwargs
    # fix says True there, False elsewhere (verified per release by the static catalog).
    # 4.57.1-5.16 declare False; 4.50-4.57.0 build their own CrossEntropyLoss (and before
    # 4.53 nothing in them declares anything).
    "Gemma3ForConditionalGeneration": Window("5.17.0"),
    # Before 4.52: its own CrossEntropyLoss, nothing declared.
    "PaliGemmaForConditionalGeneration": Window("4.52.1"),
    # Before 4.52: its own CrossEntropyLoss (no **kwargs); 4.52-4.55 call loss_function
    # without them.
    "Qwen2VLForConditionalGeneration": Window("4.56.0"),
    # Its own CrossEntropyLoss before 5.6, declares False from 5.6.
    "Gemma3nForConditionalGeneration": None,
}


def forwards_num_items_to_loss(name: str, transformers_version: str) -> bool:
    """Whether wrapper ``name`` of that release normalises its loss by num_items_in_batch."""
    window = FORWARDS_NUM_ITEMS_TO_LOSS[name]
    return window is not None and window.contains(transformers_version)


def tiny_vision_wrapper(name: str, seed: int = 0) -> Any:
    """A random-init vision-language wrapper of class ``name`` from a tiny config."""
    import torch

    module, build_config = VISION_WRAPPERS[name]
    cls = getattr(importlib.import_module(module), name)
    config = build_config()
    torch.manual_seed(seed)
    return cls(config)


OWN_LOSS_WRAPPER = "OwnLossWrapper"
"""Class name of :func:`tiny_own_loss_wrapper`'s outer model."""


@functools.cache
def _own_loss_classes() -> tuple[type, type]:
    import torch
    import transformers
    from transformers.modeling_outputs import CausalLMOutputWithPast

    class InnerDeclaresFalse(transformers.LlamaModel):  # type: ignore[misc, valid-type]
        accepts_loss_kwargs = False

    class OwnLossWrapper(transformers.LlamaPreTrainedModel):  # type: ignore[misc, valid-type]
        # The outer class declares nothing and its forward takes **kwargs: Trainer's own
        # detection says True, although the loss below never sees num_items_in_batch.
        def __init__(self, config: Any) -> None:
            super().__init__(config)
            self.model = InnerDeclaresFalse(config)
            self.lm_head = torch.nn.Linear(config.hidden_size, config.vocab_size, bias=False)
            self.post_init()

        def forward(
            self,
            input_ids: Any = None,
            attention_mask: Any = None,
            labels: Any = None,
            **kwargs: Any,
        ) -> Any:
            hidden = self.model(input_ids=input_ids, attention_mask=attention_mask)[0]
            logits = self.lm_head(hidden)
            loss = None
            if labels is not None:
                # A per-micro-batch mean, as Gemma3 4.50-4.56 and Gemma3n before 5.6 build it.
                loss = torch.nn.CrossEntropyLoss()(
                    logits[:, :-1].reshape(-1, logits.size(-1)).float(),
                    labels[:, 1:].reshape(-1),
                )
            return CausalLMOutputWithPast(loss=loss, logits=logits)

    OwnLossWrapper.__name__ = OwnLossWrapper.__qualname__ = OWN_LOSS_WRAPPER
    return InnerDeclaresFalse, OwnLossWrapper


def tiny_own_loss_wrapper(seed: int = 0) -> Any:
    """A wrapper of the shape transformers' vision wrappers had before 4.57.1.

    The outer forward builds its own ``nn.CrossEntropyLoss()`` (blind to
    ``num_items_in_batch``) and only the inner ``.model``'s class declares
    ``accepts_loss_kwargs = False``. No pinned release still has that shape (Gemma3 declares
    False on the outer class from 4.57.1, Gemma3n from 5.6), so the runtime tier builds it.
    """
    import torch
    from transformers import LlamaConfig

    config = LlamaConfig(**_text_kwargs(VOCAB, HIDDEN, 1))
    config._attn_implementation = "eager"
    torch.manual_seed(seed)
    return _own_loss_classes()[1](config)
