"""Downstream patches: code in the projects canary serves that reaches into upstream
internals, registered so the checks protecting it can name it.

One section per upstream package, kept in the order of its catalog module. A ``reference``
says where the patch lives (repository and pull request), so a drift report leads the
maintainer straight to the code that breaks. ``upstream`` names what the patch uses as
``module:qualname`` (``module`` alone for a whole module), so ``python -m canary surface
--stale PROJECT`` can tell an entry whose project uses none of it any more (wherever the
project imports it from: a re-export counts).
"""

from __future__ import annotations

from canary.fixes.fix import Fix

# -- protected by canary/checks/test_transformers.py ------------------------------------
TRANSFORMERS_PATCHES: tuple[Fix, ...] = (
    Fix(
        name="modeling_utils checkpoint alias",
        summary=(
            "swaps transformers.modeling_utils.checkpoint (the module's own binding of "
            "torch.utils.checkpoint.checkpoint) for its offloading gradient checkpoint"
        ),
        reference="unsloth-zoo#549",
        upstream=("transformers.modeling_utils:checkpoint",),
    ),
    Fix(
        name="bitsandbytes Linear4bit replacement",
        summary=(
            "patches transformers.integrations.bitsandbytes' replacement of nn.Linear by "
            "bnb.nn.Linear4bit when loading 4-bit models"
        ),
        reference="unsloth-zoo#491",
        upstream=(
            "transformers.integrations.bitsandbytes:replace_with_bnb_linear",
            "transformers.integrations.bitsandbytes:_replace_with_bnb_linear",
        ),
    ),
    Fix(
        name="quantizers should_convert_module",
        summary=(
            "calls transformers.quantizers.quantizers_utils.should_convert_module(full_name, "
            "patterns) to skip modules it keeps unquantized"
        ),
        reference="unsloth-zoo#488",
        upstream=("transformers.quantizers.quantizers_utils:should_convert_module",),
    ),
    Fix(
        name="FP8Linear construction",
        summary=(
            "builds transformers.integrations.finegrained_fp8.FP8Linear layers itself, passing "
            "the bias flag under the name the release uses (bias, later has_bias)"
        ),
        reference="unsloth-zoo#572",
        upstream=("transformers.integrations.finegrained_fp8:FP8Linear",),
    ),
    Fix(
        name="processing_utils Unpack",
        summary="imports Unpack from transformers.processing_utils for its processor kwargs types",
        reference="unsloth-zoo#583",
        upstream=("transformers.processing_utils:Unpack",),
    ),
    Fix(
        name="Gemma3Attention patch",
        summary=(
            "replaces Gemma3Attention.forward in transformers.models.gemma3.modeling_gemma3 "
            "(patch_Gemma3Attention in unsloth_zoo/temporary_patches/gemma.py)"
        ),
        reference="unsloth-zoo",
        upstream=("transformers.models.gemma3.modeling_gemma3:Gemma3Attention",),
    ),
    Fix(
        name="GptOssModel patch",
        summary=(
            "patches GptOssModel in transformers.models.gpt_oss.modeling_gpt_oss "
            "(patch_GptOssModel in unsloth_zoo/temporary_patches/gpt_oss.py)"
        ),
        reference="unsloth-zoo",
        upstream=("transformers.models.gpt_oss.modeling_gpt_oss:GptOssModel",),
    ),
    Fix(
        name="auto mapping registration",
        summary=(
            "reads and extends _LazyAutoMapping's private tables (_model_mapping, "
            "_extra_content via register) to map its model classes into the Auto classes"
        ),
        reference="unsloth#5155",
        # unsloth reaches _LazyAutoMapping through its instances (MODEL_FOR_CAUSAL_LM_MAPPING,
        # an Auto class's _model_mapping), which a static reference cannot type: name those.
        upstream=(
            "transformers.models.auto.auto_factory:_LazyAutoMapping",
            "transformers.models.auto.auto_factory:_BaseAutoModelClass",
            "transformers.models.auto.auto_factory:_get_model_class",
            "transformers.models.auto.modeling_auto:MODEL_FOR_CAUSAL_LM_MAPPING",
        ),
    ),
    Fix(
        name="PretrainedConfig import",
        summary=(
            "imports PretrainedConfig from transformers.configuration_utils (renamed "
            "PreTrainedConfig in 5.0, with the old name kept as an alias)"
        ),
        reference="unsloth#5036",
        upstream=("transformers.configuration_utils:PretrainedConfig",),
    ),
    Fix(
        name="apply_chat_template call",
        summary=(
            "calls PreTrainedTokenizerBase.apply_chat_template with conversation, "
            "chat_template, add_generation_prompt and tokenize by keyword"
        ),
        reference="unsloth#5036",
        upstream=("transformers.tokenization_utils_base:PreTrainedTokenizerBase",),
    ),
    Fix(
        name="KV cache classes",
        summary="builds and type-checks Cache / DynamicCache from transformers.cache_utils",
        reference="unsloth#5036",
        upstream=("transformers.cache_utils:Cache", "transformers.cache_utils:DynamicCache"),
    ),
    Fix(
        name="training_args ParallelMode",
        summary="compares TrainingArguments.parallel_mode against training_args.ParallelMode",
        reference="unsloth#5036",
        upstream=("transformers.training_args:ParallelMode",),
    ),
)

# -- protected by canary/checks/test_trl.py ---------------------------------------------
TRL_PATCHES: tuple[Fix, ...] = (
    Fix(
        name="trl version gate",
        summary=(
            "parses trl.__version__ to choose which TRL patches to apply; a version that does "
            "not parse (0.22.0's 'unknown') turns every gate off"
        ),
        reference="unsloth#5036",
        upstream=("trl:__version__",),
    ),
    Fix(
        name="trl dataset format detection",
        summary=(
            "calls trl.data_utils.is_conversational(example) to decide whether a dataset "
            "gets a chat template before tokenisation"
        ),
        reference="unsloth#5036",
        upstream=("trl.data_utils:is_conversational",),
    ),
    Fix(
        name="NEFTune hook patch",
        summary=(
            "replaces transformers' neftune_post_forward_hook; SFTTrainer must reach NEFTune "
            "through Trainer, not a hook of its own the patch would miss"
        ),
        reference="unsloth#5036",
        upstream=("transformers.trainer_utils:neftune_post_forward_hook",),
    ),
    Fix(
        name="chat template propagation",
        summary=(
            "wraps maybe_apply_chat_template / apply_chat_template so the user's chat template "
            "and its chat_template_kwargs reach the tokenizer"
        ),
        reference="unsloth#5036",
        upstream=("trl.data_utils:maybe_apply_chat_template", "trl.data_utils:apply_chat_template"),
    ),
    Fix(
        name="GRPO trainer patch",
        summary=(
            "rewrites GRPOTrainer._prepare_inputs, _generate_and_score_completions, "
            "compute_loss and the per-token log-prob helper by source, keyed on their "
            "torch.inference_mode / accelerator.unwrap_model blocks"
        ),
        reference="unsloth#5036",
        upstream=("trl.trainer.grpo_trainer:GRPOTrainer",),
    ),
    Fix(
        name="KTO batch logps patch",
        summary="replaces KTOTrainer.get_batch_logps with a memory-efficient version",
        reference="unsloth#5036",
        upstream=("trl.trainer.kto_trainer:KTOTrainer.get_batch_logps",),
    ),
    Fix(
        name="generation unwrap patch",
        summary=(
            "patches trl.models.utils.unwrap_model_for_generation so generation runs on the "
            "fast-inference model"
        ),
        reference="unsloth#5036",
        upstream=("trl.models.utils:unwrap_model_for_generation",),
    ),
    Fix(
        name="vLLM generation patch",
        summary=(
            "overrides VLLMGeneration._init_vllm, sync_weights and generate to reuse the "
            "in-process vLLM engine instead of TRL's"
        ),
        reference="unsloth#5036",
        upstream=("trl.generation.vllm_generation:VLLMGeneration",),
    ),
)

# -- protected by canary/checks/test_peft.py --------------------------------------------
PEFT_PATCHES: tuple[Fix, ...] = (
    Fix(
        name="peft version gate",
        summary="parses peft.__version__ to choose which PEFT patches to apply",
        reference="unsloth#5036",
        upstream=("peft:__version__",),
    ),
    Fix(
        name="LoRA variant kwargs injection",
        summary=(
            "extends peft.tuners.lora.layer.VARIANT_KWARG_KEYS so the fused LoRA forward "
            "receives the variant keyword arguments (alora_offsets, ...) PEFT pops"
        ),
        reference="unsloth-zoo#430",
        upstream=("peft.tuners.lora.layer:VARIANT_KWARG_KEYS",),
    ),
    Fix(
        name="LoRA ParamWrapper patch",
        summary=(
            "patches lora.ParamWrapper (LoRA on nn.Parameter, LoraConfig.target_parameters) "
            "for MoE expert weights: forward, get_delta_weight, merge/unmerge, get_param"
        ),
        reference="unsloth-zoo#618",
        upstream=("peft.tuners.lora.layer:ParamWrapper",),
    ),
    Fix(
        name="LoraModel._create_and_replace patch",
        summary=(
            "wraps LoraModel._create_and_replace and calls the original with its positional "
            "signature (lora_config, adapter_name, target, target_name, parent, current_key)"
        ),
        reference="unsloth#4807",
        upstream=("peft.tuners.lora.model:LoraModel._create_and_replace",),
    ),
    Fix(
        name="PEFT weight conversion mapping",
        summary=(
            "wraps peft.utils.transformers_weight_conversion.build_peft_weight_mapping so "
            "adapters load onto transformers 5 converted (fused) checkpoints"
        ),
        reference="unsloth#5167",
        upstream=("peft.utils.transformers_weight_conversion:build_peft_weight_mapping",),
    ),
    Fix(
        name="PEFT dequantize_module_weight",
        summary=(
            "calls peft.utils.integrations.dequantize_module_weight(module) to merge LoRA into "
            "quantised base weights (three call sites)"
        ),
        reference="unsloth#5036",
        upstream=("peft.utils.integrations:dequantize_module_weight",),
    ),
    Fix(
        name="vLLM LoRA request",
        summary="builds vLLM LoRA requests for adapters whose peft_type is PeftType.LORA",
        reference="unsloth#5036",
        upstream=("peft.utils.peft_types:PeftType.LORA",),
    ),
    Fix(
        name="modules_to_save detection",
        summary=(
            "isinstance-checks ModulesToSaveWrapper, imported from peft.utils or "
            "peft.utils.other, to find trainable embedding and lm_head copies"
        ),
        reference="unsloth#5036",
        upstream=("peft.utils.other:ModulesToSaveWrapper",),
    ),
    Fix(
        name="PEFT adapter loading",
        summary=(
            "loads saved adapters with PeftModel.from_pretrained(model, model_id, "
            "adapter_name=..., is_trainable=...)"
        ),
        reference="unsloth#5036",
        upstream=("peft.peft_model:PeftModel.from_pretrained",),
    ),
)

DOWNSTREAM_PATCHES: tuple[Fix, ...] = (*TRANSFORMERS_PATCHES, *TRL_PATCHES, *PEFT_PATCHES)
