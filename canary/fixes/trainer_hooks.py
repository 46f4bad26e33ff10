"""Apply the fixes from ``transformers.Trainer.__init__``.

Running after the original ``__init__`` on ``self.model`` covers what a loader-time call
cannot: a model wrapped by PEFT after loading, and ``Trainer(model_init=...)`` where the
model only exists inside ``__init__``. Subclasses (TRL's SFTTrainer, ...) inherit the hook;
trainers that force ``model_accepts_loss_kwargs = False`` after ``super().__init__()``
(TRL's GRPO/DPO/KTO...) still win, because they assign after the hook ran.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from canary.fixes._log import warn_once
from canary.fixes.accepts_loss_kwargs import apply_accepts_loss_kwargs_fix
from canary.fixes.grad_accum_clamp import clamp_gradient_accumulation

logger = logging.getLogger("canary.fixes")

_MARK = "__canary_trainer_hook__"


def apply_to_trainer(trainer: Any) -> dict[str, Any]:
    """Apply both Trainer-level fixes to a constructed trainer; returns what was done.

    Call it again after changing ``trainer.model`` (e.g. patching the chunked loss in
    after construction).
    """
    shadowed = apply_accepts_loss_kwargs_fix(getattr(trainer, "model", None))
    if shadowed is not None:
        if (forced := upstream_forces_no_loss_kwargs(trainer)) is not None:
            # Trainer overrode the model's answer for a reason of its own: keep its False.
            if shadowed:
                warn_once(
                    "accepts_loss_kwargs fix: left model_accepts_loss_kwargs False: %s", forced
                )
        else:
            # Every release decides model_accepts_loss_kwargs from hasattr(unwrapped, ...)
            # inside __init__, which already ran: set the decision itself to the shadowed
            # value.
            trainer.model_accepts_loss_kwargs = shadowed
        declared = getattr(type(trainer), "loss_is_scaled_for_ga", None)
        if declared is not None:
            # transformers 5.19+: training_step's division follows the trainer class's
            # declaration, not model_accepts_loss_kwargs; the shadow then only decides
            # whether num_items_in_batch reaches the model.
            warn_once(
                "accepts_loss_kwargs fix: %s declares loss_is_scaled_for_ga = %s, which decides "
                "the accumulation division instead of the shadowed value %s",
                type(trainer).__name__,
                declared,
                shadowed,
            )
    clamped = clamp_gradient_accumulation(trainer)
    return {"accepts_loss_kwargs": shadowed, "clamped": clamped}


def upstream_forces_no_loss_kwargs(trainer: Any) -> str | None:
    """Why Trainer set ``model_accepts_loss_kwargs = False`` whatever the model says, or None.

    transformers 5.0+ does so under DeepSpeed sequence parallelism, which counts its own
    tokens; shadowing True over it would pass ``num_items_in_batch`` twice over.
    """
    accelerator = getattr(trainer, "accelerator", None)
    config = getattr(accelerator, "parallelism_config", None)
    if getattr(config, "sp_backend", None) == "deepspeed" and getattr(config, "sp_enabled", False):
        return "DeepSpeed sequence parallelism computes its own token count"
    return None


def hooks_installed() -> bool:
    """Whether ``transformers.Trainer.__init__`` currently carries the hook."""
    from transformers import Trainer

    return bool(getattr(Trainer.__init__, _MARK, False))


def install_trainer_hooks() -> bool:
    """Wrap ``transformers.Trainer.__init__`` so every trainer gets :func:`apply_to_trainer`.

    Idempotent: returns False if already installed.
    """
    from transformers import Trainer

    if hooks_installed():
        return False
    original = Trainer.__init__

    @functools.wraps(original)
    def patched_init(self: Any, *args: Any, **kwargs: Any) -> None:
        original(self, *args, **kwargs)
        # No try/except: a fix that cannot apply must not leave a trainer that trains wrongly.
        apply_to_trainer(self)

    setattr(patched_init, _MARK, True)
    patched_init.__canary_original__ = original  # type: ignore[attr-defined]
    Trainer.__init__ = patched_init
    return True


def uninstall_trainer_hooks() -> bool:
    """Restore the original ``Trainer.__init__``; returns False if the hook was not there."""
    from transformers import Trainer

    if not hooks_installed():
        return False
    Trainer.__init__ = Trainer.__init__.__canary_original__  # type: ignore[attr-defined]
    return True


@contextmanager
def trainer_hooks() -> Iterator[None]:
    """Hooks installed for the duration of the block (restored even if it raises)."""
    installed = install_trainer_hooks()
    try:
        yield
    finally:
        if installed:
            uninstall_trainer_hooks()
