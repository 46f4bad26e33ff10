"""Apply the fixes from ``transformers.Trainer.__init__``.

Running after the original ``__init__`` on ``self.model`` covers what a loader-time call
cannot: a model wrapped by PEFT after loading, and ``Trainer(model_init=...)`` where the
model only exists inside ``__init__``. Subclasses (TRL's SFTTrainer, ...) inherit the hook;
trainers that force ``model_accepts_loss_kwargs = False`` after ``super().__init__()``
(TRL's GRPO/DPO/KTO...) still win, because they assign after the hook ran.

Where Trainer's own decision must stand, the hook leaves it:

* transformers 5.0+ forces ``model_accepts_loss_kwargs = False`` in ``__init__`` under
  DeepSpeed sequence parallelism (it counts its own tokens); the hook keeps that False
  (:func:`upstream_forces_no_loss_kwargs`);
* from 5.19 a trainer may set ``loss_is_scaled_for_ga``, which ``training_step`` reads
  instead of ``model_accepts_loss_kwargs`` to decide the accumulation division. Its author
  knows how its ``compute_loss`` scales, so it is respected; the hook warns once where it
  contradicts the shadowed value;
* 4.46.x-4.47.x never divide the loss by the accumulation steps: where the decision is
  False (the loss is a per-micro-batch mean) and there is accumulation, nothing can make the
  step right, so the hook raises :class:`NoDivisionError` instead of training with
  gradients that many times too large (:data:`NO_DIVISION_WINDOW`; tags.toml and the
  README state this floor). On 4.47.0 and 4.48.0 it raises for a True too: those releases
  withhold the token count from such models (:data:`COUNT_WITHHELD_WINDOW`).
"""

from __future__ import annotations

import functools
import inspect
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from canary.fixes._log import warn_once
from canary.fixes.accepts_loss_kwargs import (
    COUNT_WITHHELD_WINDOW,
    NO_DIVISION_WINDOW,
    apply_accepts_loss_kwargs_fix,
)
from canary.fixes.grad_accum_clamp import clamp_gradient_accumulation

logger = logging.getLogger("canary.fixes")

_MARK = "__canary_trainer_hook__"


class NoDivisionError(RuntimeError):
    """This transformers never divides the loss by the accumulation steps, and the model's
    loss needs that division: no fix can make the training step right on this release."""


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
            # Every release decides model_accepts_loss_kwargs inside __init__, which already
            # ran: set the decision itself to the shadowed value.
            trainer.model_accepts_loss_kwargs = shadowed
        _warn_where_the_division_is_decided_elsewhere(trainer)
    _refuse_where_nothing_divides(trainer)
    clamped = clamp_gradient_accumulation(trainer)
    return {"accepts_loss_kwargs": shadowed, "clamped": clamped}


def _warn_where_the_division_is_decided_elsewhere(trainer: Any) -> None:
    """Say so where ``model_accepts_loss_kwargs`` does not decide the accumulation division."""
    accepts = bool(getattr(trainer, "model_accepts_loss_kwargs", False))
    # transformers 5.19+: training_step divides unless self.loss_is_scaled_for_ga, when a
    # trainer (class or instance) sets it; model_accepts_loss_kwargs then only decides whether
    # num_items_in_batch reaches the model. The trainer's author knows how its compute_loss
    # scales, so the declaration is respected; a disagreement is worth a warning.
    scaled = getattr(trainer, "loss_is_scaled_for_ga", None)
    contradicts = scaled is not None and bool(scaled) is not accepts
    if contradicts and _release_reads_loss_is_scaled_for_ga():
        warn_once(
            "accepts_loss_kwargs fix: %s sets loss_is_scaled_for_ga = %s, which decides the "
            "gradient-accumulation division instead of model_accepts_loss_kwargs = %s",
            type(trainer).__name__,
            scaled,
            accepts,
        )


def _refuse_where_nothing_divides(trainer: Any) -> None:
    """Raise where this release leaves a per-micro-batch mean loss undivided under accumulation.

    ``model_accepts_loss_kwargs`` False says the loss is such a mean (Trainer then passes no
    ``num_items_in_batch``), and 4.46.x-4.47.x never divide it: every optimizer step would
    take the sum of the micro-batch gradients, ``gradient_accumulation_steps`` times too
    large. True is right there (the model divides by the accumulated token count itself),
    except on 4.47.0 and 4.48.0, which withhold that count from such models
    (COUNT_WITHHELD_WINDOW).
    """
    args = getattr(trainer, "args", None)
    steps = getattr(args, "gradient_accumulation_steps", 1)
    accepts = getattr(trainer, "model_accepts_loss_kwargs", False)
    if steps > 1 and accepts and COUNT_WITHHELD_WINDOW.contains(_transformers_version()):
        # compute_loss is called without the count, so a compute_loss_func lacks it too.
        raise NoDivisionError(
            f"transformers {_transformers_version()} withholds num_items_in_batch from "
            "models that accept it and leaves their per-micro-batch mean loss undivided by "
            f"gradient_accumulation_steps ({steps}): every optimizer step would take gradients "
            f"{steps} times too large. Use transformers 4.48.1 or later (4.47.1 also "
            "trains such models right), or gradient_accumulation_steps=1"
        )
    if steps <= 1 or accepts:
        return
    if getattr(trainer, "compute_loss_func", None) is not None:
        return  # it is handed num_items_in_batch whatever the flag says, and normalises
    if not _release_never_divides():
        return
    model = getattr(trainer, "model", None)
    raise NoDivisionError(
        f"transformers {_transformers_version()} never divides the loss by "
        f"gradient_accumulation_steps ({steps}), and {type(model).__name__}'s loss is a "
        "per-micro-batch mean (model_accepts_loss_kwargs is False): every optimizer step "
        f"would take gradients {steps} times too large. Upgrade transformers to 4.48.0 or "
        "later, or train with gradient_accumulation_steps=1 (a larger batch instead)"
    )


def _release_reads_loss_is_scaled_for_ga() -> bool:
    # Trainer itself declares the attribute (None) from 5.19, the release that reads it.
    from transformers import Trainer

    return "loss_is_scaled_for_ga" in vars(Trainer)


def _transformers_version() -> str:
    import transformers

    return str(transformers.__version__)


def _release_never_divides() -> bool:
    return NO_DIVISION_WINDOW.contains(_transformers_version())


def init_forces_for_sequence_parallel() -> bool:
    """Whether this release's ``Trainer.__init__`` reads ``parallelism_config.sp_backend``.

    A bytecode fact (the name in ``__init__``'s ``co_names``, past the hook's wrapper):
    transformers 5.0+ forces ``model_accepts_loss_kwargs = False`` there under DeepSpeed
    sequence parallelism; 4.x has no such branch.
    """
    from transformers import Trainer

    code = getattr(inspect.unwrap(Trainer.__init__), "__code__", None)
    return code is not None and "sp_backend" in code.co_names


def upstream_forces_no_loss_kwargs(trainer: Any) -> str | None:
    """Why Trainer set ``model_accepts_loss_kwargs = False`` whatever the model says, or None.

    transformers 5.0+ does so under DeepSpeed sequence parallelism, which counts its own
    tokens; shadowing True over it would pass ``num_items_in_batch`` twice over. The same
    condition as ``Trainer.__init__``'s (``pc is not None and pc.sp_backend == "deepspeed"
    and pc.sp_enabled``), and only where this release's ``__init__`` has that branch and the
    value it left is False: elsewhere nothing was forced and the shadow applies.
    """
    accelerator = getattr(trainer, "accelerator", None)
    config = getattr(accelerator, "parallelism_config", None)
    sequence_parallel = getattr(config, "sp_backend", None) == "deepspeed" and getattr(
        config, "sp_enabled", False
    )
    if config is None or not sequence_parallel:
        return None
    if not init_forces_for_sequence_parallel():
        return None
    if getattr(trainer, "model_accepts_loss_kwargs", None) is not False:
        return None
    return "DeepSpeed sequence parallelism computes its own token count"


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
