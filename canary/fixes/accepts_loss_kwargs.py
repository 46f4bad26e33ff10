"""accepts_loss_kwargs shadowing: tell Trainer the truth about who normalises the loss.

Trainer decides ``model_accepts_loss_kwargs`` in ``__init__`` from the (accelerate- and
PEFT-unwrapped) model: ``model.accepts_loss_kwargs`` if ``hasattr``, else "does forward take
``**kwargs``". When True, Trainer passes ``num_items_in_batch`` and does not divide the loss
by the accumulation steps; when False it divides. Two ways that goes wrong:

* vision wrappers (Gemma3/PaliGemma/Qwen2-VL ForConditionalGeneration, Gemma3n before 5.x)
  declare ``accepts_loss_kwargs = False`` only on the inner ``.model``; the outer forward
  takes ``**kwargs``, so Trainer infers True and the loss is never divided under
  accumulation;
* a forward that *does* honour ``num_items_in_batch`` (this project's chunked loss) on a
  class that declares False would be divided twice.

What the fix does not claim, found by the catalog across every release:

* where the outer forward already honours ``num_items_in_batch`` (it calls
  ``self.loss_function(..., **kwargs)``: Gemma3ForConditionalGeneration from 5.17.0,
  PaliGemma and Qwen2-VL on 4.57+) the inner ``.model``'s False is still inherited. Trainer
  then divides a per-micro-batch mean by the accumulation steps: the right scale, but not
  the exact token-count weighting. Trusting the outer forward instead would need to know
  that it forwards ``**kwargs`` into the loss, which some releases do not (Qwen2-VL 4.53.0
  calls ``loss_function`` without them), and a wrong True is the serious failure (a loss
  the accumulation steps times too large, #4982), so the fix stays on the safe side;
* transformers 4.46.2 to 4.47.1 never divide in ``training_step``, so a shadowed False
  cannot restore the division there.

The fix sets the right value as an instance attribute on every wrapper level, so whichever
level Trainer's release inspects (the outer model, ``get_base_model()``, ``base_model.model``)
sees it. ``type(m).__dict__`` is read instead of ``hasattr`` because PEFT's ``__getattr__``
forwards attribute lookups down the chain and would report a value the level never declared.
"""

from __future__ import annotations

import inspect
import logging
from typing import Any

from canary.fixes._log import warn_once
from canary.fixes.chunked_loss import is_chunked_loss_forward

logger = logging.getLogger("canary.fixes")

ATTR = "accepts_loss_kwargs"


def _own_attribute(level: Any, name: str) -> bool:
    """``name`` is a sub-module or class attribute of this level itself.

    Not one reached through ``__getattr__`` forwarding: LoraModel forwards ``base_model``
    to the HF model's property, which would skip the HF model and land on its inner model.
    """
    return name in getattr(level, "_modules", {}) or hasattr(type(level), name)


def wrapper_chain(model: Any) -> list[Any]:
    """The model and each level below it via ``.base_model`` then ``.model``.

    PeftModel -> LoraModel (PeftModel.base_model) -> the HF model (LoraModel.model) -> its
    inner ``.model`` (e.g. Gemma3Model). Prompt-learning PeftModels point straight at the HF
    model. Each object appears once; HF's ``base_model`` property returns ``self`` on the
    innermost level, which ends the walk.
    """
    chain: list[Any] = []
    seen: set[int] = set()
    level = model
    while level is not None and id(level) not in seen:
        chain.append(level)
        seen.add(id(level))
        nxt = None
        for name in ("base_model", "model"):
            if not _own_attribute(level, name):
                continue
            try:
                candidate = getattr(level, name, None)
            except Exception as exc:  # a property that fails is a dead end, not a crash
                logger.debug("wrapper walk: %s.%s raised %r", type(level).__name__, name, exc)
                candidate = None
            if (
                candidate is not None
                and id(candidate) not in seen
                and hasattr(candidate, "forward")
            ):
                nxt = candidate
                break
        level = nxt
    return chain


def declared_value(model: Any) -> bool | None:
    """The first ``accepts_loss_kwargs`` a level's own class declares, walking down the chain."""
    for level in wrapper_chain(model):
        # The level's own class only: a value inherited or reached through PEFT's
        # __getattr__ forwarding is not a declaration of this level.
        value = type(level).__dict__.get(ATTR)
        if isinstance(value, bool):
            return value
    return None


def uses_chunked_loss(model: Any) -> bool:
    """True if any level's forward is the chunked-loss forward (it honours num_items_in_batch)."""
    return any(is_chunked_loss_forward(level) for level in wrapper_chain(model))


def _shadow(model: Any, value: bool) -> None:
    for level in wrapper_chain(model):
        try:
            object.__setattr__(level, ATTR, value)
        except Exception as exc:
            # A level we cannot shadow may be the one Trainer inspects: say so, do not guess.
            warn_once(
                "accepts_loss_kwargs fix: could not shadow %s on %s: %r",
                ATTR,
                type(level).__name__,
                exc,
            )


def apply_accepts_loss_kwargs_fix(model: Any) -> bool | None:
    """Shadow ``accepts_loss_kwargs`` on every wrapper level of ``model``.

    Returns the value shadowed: True when the chunked-loss forward is in use, else the first
    value a level's class declares; None when nothing declares one (text LMs: Trainer's own
    ``**kwargs`` detection is right and is left alone).
    """
    if model is None:
        return None
    if uses_chunked_loss(model):
        value: bool | None = True
    else:
        value = declared_value(model)
    if value is not None:
        _shadow(model, value)
    return value


def _trainer_unwrap(model: Any) -> Any:
    """The object Trainer's ``__init__`` inspects: PEFT unwrapped like the releases do."""
    try:
        from peft import PeftModel
    except ImportError:
        return model
    if isinstance(model, PeftModel):
        if hasattr(model, "get_base_model"):
            return model.get_base_model()
        return model.base_model.model
    return model


def trainer_detection(model: Any) -> bool:
    """What Trainer ``__init__`` decides for ``model_accepts_loss_kwargs`` (4.57 .. 5.x).

    Mirrors every supported release: unwrap PEFT (``get_base_model()``), then
    ``model.accepts_loss_kwargs`` if ``hasattr``, else whether ``forward`` takes ``**kwargs``.
    (Tests use it to show what the value would be without the fix.)
    """
    unwrapped = _trainer_unwrap(model)
    if hasattr(unwrapped, ATTR):
        return bool(getattr(unwrapped, ATTR))
    params = inspect.signature(unwrapped.forward).parameters.values()
    return any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params)
