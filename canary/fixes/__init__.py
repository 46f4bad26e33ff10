"""The fixes the canary protects: patches that reach into transformers, trl and peft internals.

Each fix lives in its own module and imports torch/transformers lazily, so the static
tier can name fixes (``FIXES``) without importing any upstream package. Checks in the
catalog name the fix that depends on them; an unknown name is an error at collection.

Downstream patches that live in the projects canary serves (not in this package) are
registered too, in :mod:`canary.fixes.downstream`, so a check protecting one of them
names it and where it lives just as precisely.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Fix:
    """A patch that depends on upstream internals, named by checks that protect it."""

    name: str
    summary: str
    module: str | None = None  # the module in this package; None for a downstream patch
    reference: str | None = None  # where a downstream patch lives: "unsloth-zoo#549"

    @property
    def kind(self) -> str:
        return "fix" if self.module is not None else "downstream patch"

    def __str__(self) -> str:
        where = f" ({self.reference})" if self.reference else ""
        return f"{self.kind} {self.name!r}{where}"


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
    from canary.fixes.downstream import DOWNSTREAM_PATCHES

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
