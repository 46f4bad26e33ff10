"""accepts_loss_kwargs shadowing: tell Trainer the truth about who normalises the loss.

Trainer decides ``model_accepts_loss_kwargs`` in ``__init__`` from the (accelerate- and
PEFT-unwrapped) model: ``model.accepts_loss_kwargs`` if ``hasattr``, else "does forward take
``**kwargs``". When True, Trainer passes ``num_items_in_batch`` and does not divide the loss
by the accumulation steps; when False it divides. Only the model whose forward computes the
loss can be right about that, and vision wrappers put the declaration one level too deep.

The rule (:func:`decide`), applied to the *loss level*, the outermost wrapper level that is a
transformers model (PEFT levels only delegate to it):

1. a chunked-loss forward anywhere in the chain -> True (it divides by
   ``num_items_in_batch`` itself, even on a class that declares False);
2. the loss level (or a level above it) declares ``accepts_loss_kwargs`` -> that value
   (Gemma3ForConditionalGeneration 4.57-5.16, Gemma3n from 5.6 declare False themselves);
3. the loss level's forward hands its own ``**kwargs`` (where Trainer puts
   ``num_items_in_batch``) to ``self.loss_function``, and that loss function takes
   ``num_items_in_batch`` -> None, nothing shadowed: Trainer's own detection (True, the
   forward takes ``**kwargs``) is right, the loss is normalised over the whole accumulated
   batch and the inner ``.model``'s False says nothing about it
   (Gemma3ForConditionalGeneration from 5.17, PaliGemma from 4.52, Qwen2-VL from 4.56;
   text LMs too). Read from the forward's syntax tree
   (``inspect.getsource`` + ``ast``) after a bytecode gate (``loss_function`` in
   ``co_names``), so reformatting does not matter; unreadable source falls through to 5;
4. the loss level's forward computes the loss itself and ``num_items_in_batch`` never
   reaches it: its own cross-entropy (``nn.CrossEntropyLoss()``, ``F.cross_entropy``), or
   ``self.loss_function`` without its ``**kwargs``, and no mention of
   ``num_items_in_batch`` -> False: a per-micro-batch mean that Trainer must divide,
   whatever the levels below declare (own cross-entropy: Gemma3 before 4.57.1, PaliGemma
   and Qwen2-VL before 4.52, Gemma3n before 5.6, the seed's #4982; loss_function without
   them: Qwen2-VL 4.52-4.55). Before 4.53 none of these classes declares anything, so
   falling through to 6 left Trainer's True from ``**lm_kwargs``: 4.50.0's Gemma3 and
   PaliGemma trained with gradients the accumulation steps times too large. Read from the
   same syntax tree; unreadable source falls through to 5;
5. else the first value an inner level's class declares;
6. else None: nothing declared, Trainer's ``**kwargs`` detection stands.

Rule 3 checks that ``**kwargs`` reach the loss rather than trusting ``loss_function`` alone:
Qwen2-VL 4.52-4.55 calls it without them, and a wrong True is the serious failure (a loss the
accumulation steps times too large). A wrong False is milder: Trainer divides a
per-micro-batch mean, the right scale without the token-count weighting.

What the fix cannot do: transformers 4.46.x and 4.47.x never divide the loss by the
accumulation steps (4.46.0/4.46.1 multiply by them before Accelerate divides, 4.46.2-4.47.1
give Accelerate no plugin and do not divide), so a False, shadowed or Trainer's own, cannot
restore the division there: :data:`NO_DIVISION_WINDOW`, where the construction hook refuses
gradient accumulation over such a loss (``trainer_hooks.NoDivisionError``).

The fix sets the value as an instance attribute on every wrapper level, so whichever level
Trainer's release inspects (the outer model, ``get_base_model()``, ``base_model.model``) sees
it. ``type(m).__dict__`` is read instead of ``hasattr`` because PEFT's ``__getattr__``
forwards attribute lookups down the chain and would report a value the level never declared.
"""

from __future__ import annotations

import ast
import inspect
import logging
import textwrap
from dataclasses import dataclass
from typing import Any

from canary.fixes._log import warn_once
from canary.fixes.chunked_loss import is_chunked_loss_forward
from canary.versions import Window, Windows

logger = logging.getLogger("canary.fixes")

ATTR = "accepts_loss_kwargs"

NO_DIVISION_WINDOW = Window("4.46.0", "4.48.0")
"""Releases whose Trainer never divides the loss by the accumulation steps, net: 4.46.0 and
4.46.1 multiply it by them before Accelerate (``num_steps`` = the same count) divides
(4.46.1 trainer.py ``training_step``: ``loss *= self.args.gradient_accumulation_steps``);
4.46.2-4.47.1 give Accelerate no plugin and only divide the logged value. A False cannot
restore the division there. 4.48.0 divides in ``training_step`` when the flag is False."""

COUNT_WITHHELD_WINDOW = Windows((Window("4.47.0", "4.47.1"), Window("4.48.0", "4.48.1")))
"""4.47.0's and 4.48.0's ``training_step`` call ``compute_loss(model, inputs)`` *without*
``num_items_in_batch`` exactly when ``model_accepts_loss_kwargs`` is True (4.47.0
trainer.py:3652-3655, an inverted condition 4.47.1 removed and 4.48.0 brought back at
3675-3678; 4.48.1 removed it again). A True model then returns a per-micro-batch mean that
nothing divides (4.47.0: nothing divides any loss; 4.48.0 divides only where the count is
None, and it is not: it was computed, then withheld), so with accumulation its gradients are
a sum of micro-batch means. Found by the behaviour sweep, on each release."""

# How Trainer.__init__ decides model_accepts_loss_kwargs, by release (trainer.py):
# 4.46.x: a var-keyword parameter named ``loss_kwargs`` on the (PEFT-unwrapped) forward;
# 4.47.x: any var-keyword parameter; 4.48.0-4.52.4: ``hasattr(model, ...)`` on the object it
# was given, else any var-keyword; 4.53.0+: the same on the unwrapped model.
_BY_NAME = Window("4.46.0", "4.47.0")
_NO_ATTRIBUTE = Window("4.46.0", "4.48.0")
_ASKS_GIVEN = Window("4.48.0", "4.53.0")


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


def _declared(level: Any) -> bool | None:
    # The level's own class only: a value inherited or reached through PEFT's __getattr__
    # forwarding is not a declaration of this level.
    value = type(level).__dict__.get(ATTR)
    return value if isinstance(value, bool) else None


def declared_value(model: Any) -> bool | None:
    """The first ``accepts_loss_kwargs`` a level's own class declares, walking down the chain."""
    for level in wrapper_chain(model):
        if (value := _declared(level)) is not None:
            return value
    return None


def uses_chunked_loss(model: Any) -> bool:
    """True if any level's forward is the chunked-loss forward (it honours num_items_in_batch)."""
    return any(is_chunked_loss_forward(level) for level in wrapper_chain(model))


def loss_level_index(chain: list[Any]) -> int | None:
    """Index of the level whose forward computes the loss: the outermost transformers model.

    Recognised by transformers' ``loss_function`` on its class (PreTrainedModel, 4.46+);
    PeftModel and LoraModel only delegate to it.
    """
    for i, level in enumerate(chain):
        if hasattr(type(level), "loss_function"):
            return i
    return None


def _forward_function(level: Any) -> Any:
    """The plain function ``level.forward`` runs, past bound-method and decorator wrappers."""
    forward = getattr(level, "forward", None)
    return inspect.unwrap(getattr(forward, "__func__", forward))


def _forward_syntax(function: Any) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(function)))
    except (OSError, TypeError, SyntaxError) as exc:
        logger.debug("accepts_loss_kwargs: no readable source for %r: %r", function, exc)
        return None
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            return node  # getsource starts at the function (or its decorators)
    return None


def forwards_num_items_to_loss(level: Any) -> bool:
    """``level.forward`` hands its own ``**kwargs`` to ``self.loss_function``, which takes
    ``num_items_in_batch``: Trainer's count then reaches the loss and normalises it.

    False when it cannot tell (no source, no loss function): the caller falls back to the
    inner declaration, the safe side.
    """
    function = _forward_function(level)
    code = getattr(function, "__code__", None)
    # Bytecode gate: no source read for forwards that never touch loss_function.
    if code is None or "loss_function" not in code.co_names:
        return False
    node = _forward_syntax(function)
    if node is None or node.args.kwarg is None or not node.args.args:
        return False
    self_name, var_keyword = node.args.args[0].arg, node.args.kwarg.arg
    forwarded = any(
        isinstance(call, ast.Call)
        and isinstance(call.func, ast.Attribute)
        and call.func.attr == "loss_function"
        and isinstance(call.func.value, ast.Name)
        and call.func.value.id == self_name
        and any(
            kw.arg is None and isinstance(kw.value, ast.Name) and kw.value.id == var_keyword
            for kw in call.keywords
        )
        for call in ast.walk(node)
    )
    if not forwarded:
        return False
    try:
        parameters = inspect.signature(level.loss_function).parameters
    except Exception as exc:  # a loss_function property that fails is not one that counts
        logger.debug("accepts_loss_kwargs: %s.loss_function: %r", type(level).__name__, exc)
        return False
    return "num_items_in_batch" in parameters


# Callees that compute a cross-entropy mean: torch.nn.CrossEntropyLoss (as a class, then
# called) and torch.nn.functional.cross_entropy, however they were imported.
_CROSS_ENTROPY = frozenset({"CrossEntropyLoss", "cross_entropy"})
_LOSS_FUNCTION = "loss_function"
_NUM_ITEMS = "num_items_in_batch"


def _mentions_num_items(node: ast.AST) -> bool:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and sub.id == _NUM_ITEMS:
            return True
        if isinstance(sub, ast.arg | ast.keyword) and sub.arg == _NUM_ITEMS:
            return True
        if isinstance(sub, ast.Attribute) and sub.attr == _NUM_ITEMS:
            return True
        if isinstance(sub, ast.Constant) and sub.value == _NUM_ITEMS:
            return True
    return False


def _computes_a_loss(call: ast.AST, self_name: str) -> bool:
    if not isinstance(call, ast.Call):
        return False
    func = call.func
    if isinstance(func, ast.Name):
        return func.id in _CROSS_ENTROPY
    if not isinstance(func, ast.Attribute):
        return False
    if func.attr == _LOSS_FUNCTION:
        return isinstance(func.value, ast.Name) and func.value.id == self_name
    return func.attr in _CROSS_ENTROPY


def computes_loss_blind_to_num_items(level: Any) -> bool:
    """``level.forward`` computes the training loss itself (its own cross-entropy, or
    ``self.loss_function``) and ``num_items_in_batch`` never reaches it: a per-micro-batch
    mean, whatever Trainer passes in ``**kwargs``.

    False when the forward hands its ``**kwargs`` to a loss function that counts them
    (:func:`forwards_num_items_to_loss`), names ``num_items_in_batch`` anywhere, computes no
    loss it can see, or has no readable source: the caller then falls back to declarations.
    """
    function = _forward_function(level)
    code = getattr(function, "__code__", None)
    # Bytecode gate: globals and attributes alike are in co_names.
    if code is None or not (_CROSS_ENTROPY | {_LOSS_FUNCTION}) & set(code.co_names):
        return False
    if forwards_num_items_to_loss(level):
        return False
    node = _forward_syntax(function)
    if node is None or not node.args.args or _mentions_num_items(node):
        return False
    self_name = node.args.args[0].arg
    return any(_computes_a_loss(call, self_name) for call in ast.walk(node))


@dataclass(frozen=True)
class Decision:
    """The value to shadow (None: leave Trainer's detection alone) and why."""

    value: bool | None
    reason: str


def decide(model: Any) -> Decision:
    """What ``accepts_loss_kwargs`` should be for ``model`` (the rule in the module docstring)."""
    chain = wrapper_chain(model)
    if any(is_chunked_loss_forward(level) for level in chain):
        return Decision(True, "the chunked-loss forward divides by num_items_in_batch itself")
    top = loss_level_index(chain)
    outer = chain[: top + 1] if top is not None else []
    for level in outer:
        if (value := _declared(level)) is not None:
            return Decision(value, f"{type(level).__name__} declares {ATTR} = {value}")
    if top is not None and forwards_num_items_to_loss(chain[top]):
        # Its forward takes **kwargs, so Trainer's own detection already says True.
        name = type(chain[top]).__name__
        return Decision(
            None,
            f"{name}.forward passes its **kwargs to self.loss_function: Trainer's own "
            "detection (True) stands",
        )
    if top is not None and computes_loss_blind_to_num_items(chain[top]):
        name = type(chain[top]).__name__
        return Decision(
            False,
            f"{name}.forward computes its loss without num_items_in_batch: a per-micro-batch "
            "mean Trainer must divide by the accumulation steps",
        )
    for level in chain[len(outer) :]:
        if (value := _declared(level)) is not None:
            computes = type(chain[top]).__name__ if top is not None else "the outer model"
            return Decision(
                value,
                f"inner {type(level).__name__} declares {ATTR} = {value}; {computes}.forward "
                "does not pass num_items_in_batch to its loss",
            )
    return Decision(None, f"nothing declares {ATTR}: Trainer's **kwargs detection stands")


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

    Returns the value shadowed (see :func:`decide`); None when nothing was shadowed
    (Trainer's own ``**kwargs`` detection is right and is left alone).
    """
    if model is None:
        return None
    decision = decide(model)
    if decision.value is not None:
        logger.debug("accepts_loss_kwargs fix: %s (%s)", decision.value, decision.reason)
        _shadow(model, decision.value)
    return decision.value


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


def trainer_detection(model: Any, transformers_version: str | None = None) -> bool:
    """What Trainer ``__init__`` decides for ``model_accepts_loss_kwargs`` on that release
    (default: the installed one), without the fix; tests compare the fix against it.

    Unwrap PEFT (``get_base_model()``) for the forward; from 4.48 ``accepts_loss_kwargs``
    if ``hasattr`` (on the object given until 4.52, on the unwrapped model from 4.53), else
    whether ``forward`` takes ``**kwargs`` (4.46: ``**loss_kwargs`` by that name).
    """
    if transformers_version is None:
        import transformers

        transformers_version = transformers.__version__
    unwrapped = _trainer_unwrap(model)
    params = inspect.signature(unwrapped.forward).parameters
    if _BY_NAME.contains(transformers_version):
        named = params.get("loss_kwargs")
        return named is not None and named.kind is inspect.Parameter.VAR_KEYWORD
    asked = model if _ASKS_GIVEN.contains(transformers_version) else unwrapped
    if not _NO_ATTRIBUTE.contains(transformers_version) and hasattr(asked, ATTR):
        return bool(getattr(asked, ATTR))
    return any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
