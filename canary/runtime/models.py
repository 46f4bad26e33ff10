"""Tiny random-init models and tokenizers built from configs: nothing is downloaded.

Sizes keep the CPU tier fast (hidden 32, vocab a few hundred); the GPU tier asks for a
Qwen3-shaped config at full vocabulary through the same builders.
"""

from __future__ import annotations

import importlib
from typing import Any

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
    # Releases differ in where text fields live (top level in 4.x, text_config in 5.x):
    # give both; each ignores what it does not use.
    return Qwen2VLConfig(
        text_config=text,
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


def tiny_vision_wrapper(name: str, seed: int = 0) -> Any:
    """A random-init vision-language wrapper of class ``name`` from a tiny config."""
    import torch

    module, build_config = VISION_WRAPPERS[name]
    cls = getattr(importlib.import_module(module), name)
    config = build_config()
    torch.manual_seed(seed)
    return cls(config)
