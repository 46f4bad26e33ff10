"""Every fix a check can name: this package's own fixes and the downstream patches
registered in :mod:`canary.fixes.downstream`, by unique name."""

from __future__ import annotations

from canary.fixes.downstream import DOWNSTREAM_PATCHES
from canary.fixes.fix import Fix

PROJECT_FIXES: tuple[Fix, ...] = (
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


def _registry() -> dict[str, Fix]:
    registry: dict[str, Fix] = {}
    for fix in (*PROJECT_FIXES, *DOWNSTREAM_PATCHES):
        if fix.name in registry:
            raise ValueError(f"two fixes are called {fix.name!r}; names must be unique")
        registry[fix.name] = fix
    return registry


FIXES: dict[str, Fix] = _registry()


def get_fix(name: str) -> Fix:
    """The registered fix called ``name``; a clear error for a typo in the catalog."""
    try:
        return FIXES[name]
    except KeyError:
        known = ", ".join(sorted(FIXES))
        raise KeyError(f"unknown fix {name!r}; known fixes: {known}") from None
