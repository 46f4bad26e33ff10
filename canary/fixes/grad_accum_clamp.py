"""Accelerate gradient-accumulation clamp: stop the second division of the loss.

Trainer does gradient accumulation itself: ``training_step`` divides the loss by
``current_gradient_accumulation_steps`` (or the loss is already normalised by
``num_items_in_batch``) and Trainer syncs gradients itself. Accelerate's
``Accelerator.backward`` additionally does ``loss = loss / self.gradient_accumulation_steps``
(everything but DeepSpeed). So Accelerate must be told 1 step.

Released transformers 5.2.0 .. 5.5.3 tell it the real count instead: in
``Trainer.create_accelerator_and_postprocess``::

    else:
        grad_acc_kwargs["num_steps"] = self.args.gradient_accumulation_steps
    ...
    gradient_accumulation_plugin = GradientAccumulationPlugin(**grad_acc_kwargs)

(transformers 5.2.0 trainer.py:757/762, 5.5.3 trainer.py:768/773), while ``training_step``
still divides (5.2.0 trainer.py:1972). Gradients come out ``1/gradient_accumulation_steps``
too small. 4.46.2 to 5.1.0 pass no plugin (Accelerate's default is 1 step); 5.5.4 and
later set ``grad_acc_kwargs["num_steps"] = 1`` (5.5.4 trainer.py:769). 4.46.1 does pass the
real count, without harm: its ``training_step`` multiplies the loss by the accumulation
steps before Accelerate divides, so it is outside the window.

The decision is taken from the live trainer (is Accelerate set to divide, and does this
Trainer divide itself), not from the version: :data:`DOUBLE_DIVISION_WINDOW` is the
verified data the runtime tier checks that live decision against.
"""

from __future__ import annotations

import inspect
import logging
from typing import Any

from canary.fixes._log import warn_once
from canary.versions import Window

logger = logging.getLogger("canary.fixes")

DOUBLE_DIVISION_WINDOW = Window("5.2.0", "5.5.4")
"""Releases whose Trainer gives Accelerate ``num_steps=gradient_accumulation_steps`` *and*
whose ``training_step`` divides by them too (the catalog checks it against every release).

Not every release that passes the accumulation steps to Accelerate: 4.46.1 does as well, but
its ``training_step`` multiplies the loss by them first, so Accelerate's division cancels
that and there is no double division (and nothing to clamp)."""


def in_double_division_window(transformers_version: str) -> bool:
    """Whether that transformers release has the Accelerate double division (data, not live).

    A pre-release or dev build of X counts as X (``5.5.4.dev0`` is outside, as 5.5.4 is)."""
    return DOUBLE_DIVISION_WINDOW.contains(transformers_version)


def _trainer_divides_itself(trainer: Any) -> bool | None:
    """Does this Trainer class's training_step divide by the accumulation steps itself?

    Read from the source of the ``training_step`` in use (subclasses such as TRL's wrap it
    and call super, so transformers' own is checked too). None if the source is unreadable.
    """
    from transformers import Trainer

    readable = False
    for method in (type(trainer).training_step, Trainer.training_step):
        try:
            source = inspect.getsource(method)
        except (OSError, TypeError):
            continue
        readable = True
        if "current_gradient_accumulation_steps" in source:
            return True
    return False if readable else None


def accelerate_divides(trainer: Any) -> int:
    """The divisor ``accelerator.backward`` applies to the loss (1 means none)."""
    accelerator = getattr(trainer, "accelerator", None)
    if accelerator is None:
        return 1
    from accelerate.utils import DistributedType

    if accelerator.distributed_type == DistributedType.DEEPSPEED:
        return 1  # DeepSpeed's engine scales by its own GAS; Trainer disables that (scale_wrt_gas)
    return int(accelerator.gradient_accumulation_steps)


def needs_clamp(trainer: Any) -> bool:
    """Live check: Trainer divides for accumulation itself and Accelerate would divide again."""
    if accelerate_divides(trainer) <= 1:
        return False
    divides = _trainer_divides_itself(trainer)
    if divides is None:
        warn_once(
            "gradient accumulation clamp: cannot read Trainer.training_step source; "
            "Accelerate divides the loss by %d and it is left as is",
            accelerate_divides(trainer),
        )
        return False
    return divides


def clamp_gradient_accumulation(trainer: Any) -> bool:
    """Clamp Accelerate to 1 accumulation step where it would divide a second time.

    Returns True if it clamped. A no-op where upstream already passes ``num_steps=1``.
    """
    if not needs_clamp(trainer):
        return False
    accelerator = trainer.accelerator
    before = accelerator.gradient_accumulation_steps
    # The property setter updates gradient_state.plugin_kwargs; set both explicitly so an
    # Accelerate that stores them separately is clamped too.
    accelerator.gradient_accumulation_steps = 1
    state = getattr(accelerator, "gradient_state", None)
    kwargs = getattr(state, "plugin_kwargs", None)
    if isinstance(kwargs, dict):
        kwargs["num_steps"] = 1
    if accelerator.gradient_accumulation_steps != 1:
        # Continuing would train with gradients 1/N too small.
        raise RuntimeError(
            "gradient accumulation clamp: Accelerate still reports "
            f"gradient_accumulation_steps={accelerator.gradient_accumulation_steps} after clamping"
        )
    logger.info("gradient accumulation clamp: Accelerate num_steps %d -> 1", before)
    return True
