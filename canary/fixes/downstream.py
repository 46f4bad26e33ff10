"""Downstream patches: code in the projects canary serves that reaches into upstream
internals, registered so the checks protecting it can name it.

One section per upstream package, kept in the order of its catalog module. A ``reference``
says where the patch lives (repository and pull request), so a drift report leads the
maintainer straight to the code that breaks.
"""

from __future__ import annotations

from canary.fixes import Fix

# -- protected by canary/checks/test_transformers.py ------------------------------------
TRANSFORMERS_PATCHES: tuple[Fix, ...] = ()

# -- protected by canary/checks/test_trl.py ---------------------------------------------
TRL_PATCHES: tuple[Fix, ...] = (
    Fix(
        name="trl version gate",
        summary=(
            "parses trl.__version__ to choose which TRL patches to apply; a version that does "
            "not parse (0.22.0's 'unknown') turns every gate off"
        ),
        reference="unsloth#5036",
    ),
    Fix(
        name="trl dataset format detection",
        summary=(
            "calls trl.data_utils.is_conversational(example) to decide whether a dataset "
            "gets a chat template before tokenisation"
        ),
        reference="unsloth#5036",
    ),
    Fix(
        name="NEFTune hook patch",
        summary=(
            "replaces transformers' neftune_post_forward_hook; SFTTrainer must reach NEFTune "
            "through Trainer, not a hook of its own the patch would miss"
        ),
        reference="unsloth#5036",
    ),
    Fix(
        name="chat template propagation",
        summary=(
            "wraps maybe_apply_chat_template / apply_chat_template so the user's chat template "
            "and its chat_template_kwargs reach the tokenizer"
        ),
        reference="unsloth#5036",
    ),
    Fix(
        name="GRPO trainer patch",
        summary=(
            "rewrites GRPOTrainer._prepare_inputs, _generate_and_score_completions, "
            "compute_loss and the per-token log-prob helper by source, keyed on their "
            "torch.inference_mode / accelerator.unwrap_model blocks"
        ),
        reference="unsloth#5036",
    ),
    Fix(
        name="KTO batch logps patch",
        summary="replaces KTOTrainer.get_batch_logps with a memory-efficient version",
        reference="unsloth#5036",
    ),
    Fix(
        name="generation unwrap patch",
        summary=(
            "patches trl.models.utils.unwrap_model_for_generation so generation runs on the "
            "fast-inference model"
        ),
        reference="unsloth#5036",
    ),
    Fix(
        name="vLLM generation patch",
        summary=(
            "overrides VLLMGeneration._init_vllm, sync_weights and generate to reuse the "
            "in-process vLLM engine instead of TRL's"
        ),
        reference="unsloth#5036",
    ),
)

# -- protected by canary/checks/test_peft.py --------------------------------------------
PEFT_PATCHES: tuple[Fix, ...] = (
    Fix(
        name="peft version gate",
        summary="parses peft.__version__ to choose which PEFT patches to apply",
        reference="unsloth#5036",
    ),
    Fix(
        name="LoRA variant kwargs injection",
        summary=(
            "extends peft.tuners.lora.layer.VARIANT_KWARG_KEYS so the fused LoRA forward "
            "receives the variant keyword arguments (alora_offsets, ...) PEFT pops"
        ),
        reference="unsloth-zoo#430",
    ),
    Fix(
        name="LoRA ParamWrapper patch",
        summary=(
            "patches lora.ParamWrapper (LoRA on nn.Parameter, LoraConfig.target_parameters) "
            "for MoE expert weights: forward, get_delta_weight, merge/unmerge, get_param"
        ),
        reference="unsloth-zoo#618",
    ),
    Fix(
        name="LoraModel._create_and_replace patch",
        summary=(
            "wraps LoraModel._create_and_replace and calls the original with its positional "
            "signature (lora_config, adapter_name, target, target_name, parent, current_key)"
        ),
        reference="unsloth#4807",
    ),
    Fix(
        name="PEFT weight conversion mapping",
        summary=(
            "wraps peft.utils.transformers_weight_conversion.build_peft_weight_mapping so "
            "adapters load onto transformers 5 converted (fused) checkpoints"
        ),
        reference="unsloth#5167",
    ),
    Fix(
        name="PEFT dequantize_module_weight",
        summary=(
            "calls peft.utils.integrations.dequantize_module_weight(module) to merge LoRA into "
            "quantised base weights (three call sites)"
        ),
        reference="unsloth#5036",
    ),
    Fix(
        name="vLLM LoRA request",
        summary="builds vLLM LoRA requests for adapters whose peft_type is PeftType.LORA",
        reference="unsloth#5036",
    ),
    Fix(
        name="modules_to_save detection",
        summary=(
            "isinstance-checks ModulesToSaveWrapper, imported from peft.utils or "
            "peft.utils.other, to find trainable embedding and lm_head copies"
        ),
        reference="unsloth#5036",
    ),
    Fix(
        name="PEFT adapter loading",
        summary=(
            "loads saved adapters with PeftModel.from_pretrained(model, model_id, "
            "adapter_name=..., is_trainable=...)"
        ),
        reference="unsloth#5036",
    ),
)

DOWNSTREAM_PATCHES: tuple[Fix, ...] = (*TRANSFORMERS_PATCHES, *TRL_PATCHES, *PEFT_PATCHES)
