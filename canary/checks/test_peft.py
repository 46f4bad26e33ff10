"""peft: how the fixes reach the base model under an adapter, and the LoRA internals
downstream patches reach into.

Windows were found by running every check over every release in tags.toml.
"""

from __future__ import annotations

import pytest

from canary.catalog import (
    check,
    drift,
    expect_any_of,
    expect_assignment,
    expect_base,
    expect_bound,
    expect_class_attribute,
    expect_decorated,
    expect_defined,
    expect_leading_parameters,
    expect_module_value,
    expect_parameter_kind,
    expect_parameters,
    expect_returns_by_branch,
)
from canary.codeindex import KEYWORD_ONLY

pytestmark = pytest.mark.upstream("peft")

PEFT_INIT = "peft/__init__.py"
PEFT_MODEL = "peft/peft_model.py"
TUNERS_UTILS = "peft/tuners/tuners_utils.py"
LORA_MODEL = "peft/tuners/lora/model.py"
LORA_LAYER = "peft/tuners/lora/layer.py"
LORA_CONFIG = "peft/tuners/lora/config.py"
UTILS_INIT = "peft/utils/__init__.py"
UTILS_OTHER = "peft/utils/other.py"
PEFT_TYPES = "peft/utils/peft_types.py"
INTEGRATIONS = "peft/utils/integrations.py"
WEIGHT_CONVERSION = "peft/utils/transformers_weight_conversion.py"


# -- the wrapper chain the fixes walk -----------------------------------------------------


@check(reads=PEFT_MODEL, fix="chunked NLL loss")
def test_peft_model_get_base_model(upstream):
    """PeftModel.get_base_model exists: the chunked loss patches the model it returns, so the
    adapter layers stay in the forward."""
    upstream.module(PEFT_MODEL).cls("PeftModel").method("get_base_model")


@check(reads=PEFT_MODEL, fix="chunked NLL loss")
def test_get_base_model_returns_the_transformers_model(upstream):
    """PeftModel.get_base_model returns self.base_model.model (the transformers model under
    the tuner) when the active adapter is not prompt learning, and self.base_model when it
    is (and, until 0.18, for POLY), whose virtual tokens PeftModel.forward adds before
    calling it."""
    get_base_model = upstream.module(PEFT_MODEL).cls("PeftModel").method("get_base_model")
    # Until 0.18 POLY adapters are answered like prompt learning; either way round the
    # branches must not be swapped.
    expect_any_of(
        *(
            lambda prompt=prompt: expect_returns_by_branch(
                get_base_model,
                {prompt: "self.base_model", f"not ({prompt})": "self.base_model.model"},
            )
            for prompt in (_PROMPT_LEARNING, f"{_PROMPT_LEARNING} or {_POLY}")
        )
    )


_PROMPT_LEARNING = "self.active_peft_config.is_prompt_learning"
_POLY = "self.peft_type == PeftType.POLY"


@check(reads=PEFT_MODEL, fix="accepts_loss_kwargs shadowing")
def test_peft_model_forwards_attributes(upstream):
    """PeftModel defines __getattr__ forwarding to the base model: the reason the
    accepts_loss_kwargs fix reads type(m).__dict__ instead of hasattr."""
    upstream.module(PEFT_MODEL).cls("PeftModel").method("__getattr__")


def _require_tuner_keeps_model(upstream) -> None:
    expect_assignment(
        upstream.module(TUNERS_UTILS).cls("BaseTuner").method("__init__"), "self.model"
    )


@check(reads=(TUNERS_UTILS, LORA_MODEL), fix="accepts_loss_kwargs shadowing", until="0.18.0")
def test_lora_model_forwards_attributes_to_model(upstream):
    """LoraModel keeps the transformers model as .model (BaseTuner.__init__) and forwards
    attribute lookups to it with its own __getattr__: the level the fix's wrapper walk
    passes through by .model."""
    _require_tuner_keeps_model(upstream)
    upstream.module(LORA_MODEL).cls("LoraModel").method("__getattr__")


@check(reads=TUNERS_UTILS, fix="accepts_loss_kwargs shadowing", since="0.18.0")
def test_base_tuner_forwards_attributes_to_model(upstream):
    """BaseTuner keeps the transformers model as .model and forwards attribute lookups to
    it with __getattr__ (moved up from LoraModel in 0.18.0): the level the fix's wrapper
    walk passes through by .model."""
    _require_tuner_keeps_model(upstream)
    upstream.module(TUNERS_UTILS).cls("BaseTuner").method("__getattr__")


@check(reads=TUNERS_UTILS, fix="chunked NLL loss")
def test_base_tuner_layer_location(upstream):
    """peft/tuners/tuners_utils.py defines BaseTunerLayer, the class check_lm_head imports
    from there to refuse an adapter on lm_head."""
    expect_defined(upstream.module(TUNERS_UTILS), "BaseTunerLayer")


# -- LoRA internals -------------------------------------------------------------------------

_CREATE_AND_REPLACE = (
    "self",
    "lora_config",
    "adapter_name",
    "target",
    "target_name",
    "parent",
    "current_key",
)


@check(reads=LORA_MODEL, fix="LoraModel._create_and_replace patch")
def test_lora_create_and_replace_positional_signature(upstream):
    """LoraModel._create_and_replace takes (self, lora_config, adapter_name, target,
    target_name, parent, current_key) in that order, the order the patch calls it with."""
    method = upstream.module(LORA_MODEL).cls("LoraModel").method("_create_and_replace")
    expect_leading_parameters(method, *_CREATE_AND_REPLACE)


@check(reads=LORA_MODEL, fix="LoraModel._create_and_replace patch", since="0.17.0")
def test_lora_create_and_replace_takes_parameter_name(upstream):
    """LoraModel._create_and_replace also takes keyword-only parameter_name (LoRA on
    nn.Parameter), which the patch must pass through."""
    method = upstream.module(LORA_MODEL).cls("LoraModel").method("_create_and_replace")
    expect_parameter_kind(method, "parameter_name", KEYWORD_ONLY)


@check(reads=LORA_LAYER, fix="LoRA variant kwargs injection", since="0.18.0")
def test_variant_kwarg_keys(upstream):
    """peft/tuners/lora/layer.py defines VARIANT_KWARG_KEYS as a list literal of names
    (alora_offsets among them), the list the patch extends."""
    layer = upstream.module(LORA_LAYER)
    expect_defined(layer, "VARIANT_KWARG_KEYS")
    keys = layer.assignment("VARIANT_KWARG_KEYS")
    # Unique: a list literal that holds one name among others the patch does not care about.
    if not isinstance(keys.literal, list) or "alora_offsets" not in keys.literal:
        message = f"VARIANT_KWARG_KEYS = {keys.value}, not a list literal with 'alora_offsets'"
        raise drift(layer, message)


@check(reads=LORA_LAYER, fix="LoRA ParamWrapper patch", since="0.17.0")
def test_param_wrapper(upstream):
    """lora.ParamWrapper(nn.Module, LoraLayer) defines forward, get_delta_weight, merge,
    unmerge, get_param and update_layer, the members the patch replaces or calls."""
    wrapper = upstream.module(LORA_LAYER).cls("ParamWrapper")
    expect_base(wrapper, "LoraLayer")
    for name in ("forward", "get_delta_weight", "merge", "unmerge", "get_param", "update_layer"):
        wrapper.method(name)


@check(reads=LORA_CONFIG, fix="LoRA ParamWrapper patch", since="0.17.0")
def test_lora_config_target_parameters(upstream):
    """LoraConfig declares target_parameters, which routes nn.Parameter targets to
    ParamWrapper."""
    expect_class_attribute(upstream.module(LORA_CONFIG).cls("LoraConfig"), "target_parameters")


@check(reads=WEIGHT_CONVERSION, fix="PEFT weight conversion mapping", since="0.19.0")
def test_build_peft_weight_mapping(upstream):
    """peft/utils/transformers_weight_conversion.py defines build_peft_weight_mapping(
    weight_conversions, adapter_name, peft_config), the function the patch wraps."""
    conversion = upstream.module(WEIGHT_CONVERSION)
    expect_defined(conversion, "build_peft_weight_mapping")
    expect_parameters(
        conversion.function("build_peft_weight_mapping"),
        "weight_conversions",
        "adapter_name",
        "peft_config",
    )


@check(reads=INTEGRATIONS, fix="PEFT dequantize_module_weight")
def test_dequantize_module_weight(upstream):
    """peft/utils/integrations.py defines dequantize_module_weight(module), which the patch
    calls with the module by position."""
    integrations = upstream.module(INTEGRATIONS)
    expect_defined(integrations, "dequantize_module_weight")
    expect_parameters(integrations.function("dequantize_module_weight"), "module", positional=0)


@check(reads=PEFT_TYPES, fix="vLLM LoRA request")
def test_peft_type_lora(upstream):
    """PeftType is a str enum whose LORA member is "LORA"."""
    peft_type = upstream.module(PEFT_TYPES).cls("PeftType")
    expect_base(peft_type, "enum.Enum")
    expect_class_attribute(peft_type, "LORA", "LORA")


@check(reads=(UTILS_OTHER, UTILS_INIT), fix="modules_to_save detection")
def test_modules_to_save_wrapper_paths(upstream):
    """ModulesToSaveWrapper is defined in peft/utils/other.py and exported from peft.utils,
    so both import paths the patch uses name the same class."""
    expect_defined(upstream.module(UTILS_OTHER), "ModulesToSaveWrapper")
    expect_bound(upstream.module(UTILS_INIT), "ModulesToSaveWrapper", imported_from=".other")


@check(reads=PEFT_MODEL, fix="PEFT adapter loading")
def test_peft_model_from_pretrained(upstream):
    """PeftModel.from_pretrained is a classmethod taking (model, model_id) by position and
    adapter_name= and is_trainable= by keyword, as the patch calls it."""
    from_pretrained = upstream.module(PEFT_MODEL).cls("PeftModel").method("from_pretrained")
    expect_decorated(from_pretrained, "classmethod")
    # Index 0 is cls: the call from_pretrained(model, model_id) fills 1 and 2.
    expect_parameters(from_pretrained, "model", "model_id", positional=1)
    expect_parameters(from_pretrained, "adapter_name", "is_trainable", keyword=True)


@check(reads=PEFT_INIT, fix="peft version gate")
def test_version_is_a_literal(upstream):
    """peft/__init__.py assigns __version__ the release's own version as a string literal."""
    expect_module_value(upstream.module(PEFT_INIT), "__version__", literals=[str(upstream.version)])
