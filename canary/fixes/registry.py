"""Every fix a check can name: this package's own fixes and the downstream patches
registered in :mod:`canary.fixes.downstream`, by unique name."""

from __future__ import annotations

from canary.fixes.downstream import DOWNSTREAM_PATCHES
from canary.fixes.fix import Fix
from canary.versions import Window

# The fixes' windows: where their code runs, so where every upstream name it uses must
# exist. Each starts at tags.toml's floor: 4.46.0 is the first Trainer that passes
# num_items_in_batch (4.46.2-4.47.1 never divide in training_step: the hook runs there and
# warns, so its names must still resolve); peft 0.15.0 is the oldest PEFT checked. No fix
# declares trl: none of their code names it.
TRANSFORMERS_FLOOR = Window("4.46.0")
PEFT_FLOOR = Window("0.15.0")

PROJECT_FIXES: tuple[Fix, ...] = (
    Fix(
        name="accepts_loss_kwargs shadowing",
        module="canary.fixes.accepts_loss_kwargs",
        # peft: PeftModel, to tell a PEFT wrapper level from the model it wraps.
        windows={"transformers": TRANSFORMERS_FLOOR, "peft": PEFT_FLOOR},
        summary=(
            "shadows accepts_loss_kwargs on every wrapper level so Trainer does not divide "
            "a loss that already honours num_items_in_batch"
        ),
    ),
    Fix(
        name="gradient accumulation clamp",
        module="canary.fixes.grad_accum_clamp",
        windows={"transformers": TRANSFORMERS_FLOOR},
        summary=(
            "clamps Accelerate's gradient_accumulation_steps to 1 where Trainer divides "
            "the loss itself and Accelerate would divide again"
        ),
    ),
    Fix(
        name="chunked NLL loss",
        module="canary.fixes.chunked_loss",
        # peft: BaseTunerLayer, to refuse an lm_head a tuner layer wraps.
        windows={"transformers": TRANSFORMERS_FLOOR, "peft": PEFT_FLOOR},
        summary=(
            "computes the causal-LM loss from hidden states in chunks, never materialising "
            "[batch, seq, vocab] logits, under PEFT too"
        ),
    ),
    Fix(
        name="trainer construction hook",
        module="canary.fixes.trainer_hooks",
        windows={"transformers": TRANSFORMERS_FLOOR},
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


def fix_at(path: str) -> Fix | None:
    """This package's fix whose module is the file ``path`` (``canary/fixes/x.py``), if any."""
    return next((fix for fix in PROJECT_FIXES if fix.path == path), None)


def get_fix(name: str) -> Fix:
    """The registered fix called ``name``; a clear error for a typo in the catalog."""
    try:
        return FIXES[name]
    except KeyError:
        known = ", ".join(sorted(FIXES))
        raise KeyError(f"unknown fix {name!r}; known fixes: {known}") from None
