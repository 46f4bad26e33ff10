"""The fixes the canary protects: patches that reach into transformers, trl and peft internals.

Each fix lives in its own module and imports torch/transformers lazily, so the static
tier can name fixes (``FIXES``) without importing any upstream package. Checks in the
catalog name the fix that depends on them; an unknown name is an error at collection.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Fix:
    """A patch that depends on upstream internals, named by checks that protect it."""

    name: str
    module: str
    summary: str


FIXES: dict[str, Fix] = {
    fix.name: fix
    for fix in (
        Fix(
            name="accepts_loss_kwargs shadowing",
            module="canary.fixes.accepts_loss_kwargs",
            summary=(
                "shadows accepts_loss_kwargs on every wrapper level so Trainer does not divide "
                "a loss that already honours num_items_in_batch"
            ),
        ),
        Fix(
            name="gradient accumulation clamp",
            module="canary.fixes.grad_accum_clamp",
            summary=(
                "clamps Accelerate's gradient_accumulation_steps to 1 where Trainer divides "
                "the loss itself and Accelerate would divide again"
            ),
        ),
        Fix(
            name="chunked NLL loss",
            module="canary.fixes.chunked_loss",
            summary=(
                "computes the causal-LM loss from hidden states in chunks, never materialising "
                "[batch, seq, vocab] logits, under PEFT too"
            ),
        ),
        Fix(
            name="trainer construction hook",
            module="canary.fixes.trainer_hooks",
            summary=(
                "wraps Trainer.__init__ to apply the accepts_loss_kwargs shadow and the "
                "accumulation clamp to self.model after init (PEFT-after-load, model_init)"
            ),
        ),
    )
}


def get_fix(name: str) -> Fix:
    """The registered fix called ``name``; a clear error for a typo in the catalog."""
    try:
        return FIXES[name]
    except KeyError:
        known = ", ".join(sorted(FIXES))
        raise KeyError(f"unknown fix {name!r}; known fixes: {known}") from None
