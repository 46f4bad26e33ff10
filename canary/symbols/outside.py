"""What the bases outside a package provide, for the bases whose members are fixed: a
member none of them lists is absent from a class whose other bases are all in the package.

``torch.nn.Module``'s members are read from torch 2.13.0 (the torch canary's runtime tier
pins), class attributes and what ``Module.__init__`` sets on every instance; ``str``,
``int``, ``object``, ``abc.ABC`` and the ``enum`` bases from this Python. An ``Enum`` or
``str`` base provides no arbitrary member: an enum's members are its own class body's.
"""

from __future__ import annotations

import abc
import enum
import typing

TORCH_VERSION = "2.13.0"  # the release the table below was read from

NN_MODULE_ALL = frozenset(
    {
        "T_destination", "__annotations__", "__call__", "__dict__", "__getattr__",
        "__module__", "__setstate__", "__weakref__", "_apply", "_backward_hooks",
        "_backward_pre_hooks", "_buffers", "_call_impl", "_compiled_call_impl",
        "_forward_hooks", "_forward_hooks_always_called", "_forward_hooks_with_kwargs",
        "_forward_pre_hooks", "_forward_pre_hooks_with_kwargs", "_get_backward_hooks",
        "_get_backward_pre_hooks", "_get_name", "_is_full_backward_hook",
        "_load_from_state_dict", "_load_state_dict_post_hooks", "_load_state_dict_pre_hooks",
        "_maybe_warn_non_full_backward_hook", "_modules", "_named_members",
        "_non_persistent_buffers_set", "_parameters", "_register_load_state_dict_pre_hook",
        "_register_state_dict_hook", "_replicate_for_data_parallel", "_save_to_state_dict",
        "_slow_forward", "_state_dict_hooks", "_state_dict_pre_hooks", "_version",
        "_wrapped_call_impl", "add_module", "apply", "bfloat16", "buffers", "call_super_init",
        "children", "compile", "cpu", "cuda", "double", "dump_patches", "eval", "extra_repr",
        "float", "forward", "get_buffer", "get_extra_state", "get_parameter", "get_submodule",
        "half", "ipu", "load_state_dict", "modules", "mtia", "named_buffers", "named_children",
        "named_modules", "named_parameters", "parameters", "register_backward_hook",
        "register_buffer", "register_forward_hook", "register_forward_pre_hook",
        "register_full_backward_hook", "register_full_backward_pre_hook",
        "register_load_state_dict_post_hook", "register_load_state_dict_pre_hook",
        "register_module", "register_parameter", "register_state_dict_post_hook",
        "register_state_dict_pre_hook", "requires_grad_", "set_extra_state", "set_submodule",
        "share_memory", "state_dict", "to", "to_empty", "train", "training", "type", "xpu",
        "zero_grad",
    }
)  # fmt: skip

_OBJECT = frozenset(dir(object)) | {"__dict__", "__module__", "__weakref__"}
_ENUM = (
    frozenset(dir(enum.Enum))
    | frozenset(vars(enum.Enum))
    | frozenset(dir(type(enum.Enum)))
    | {"name", "value", "_name_", "_value_", "_member_names_", "_member_map_"}
    | {"_value2member_map_", "_missing_", "_generate_next_value_", "__members__"}
)
_STR = frozenset(dir(str))
_INT = frozenset(dir(int))

KNOWN_BASES: dict[str, frozenset[str]] = {
    "torch.nn.Module": NN_MODULE_ALL,
    "torch.nn.modules.module.Module": NN_MODULE_ALL,
    "object": _OBJECT,
    "str": _STR,
    "int": _INT,
    "enum.Enum": _ENUM,
    "enum.IntEnum": _ENUM | _INT,
    "enum.StrEnum": _ENUM | _STR,
    "abc.ABC": frozenset(dir(abc.ABC)),
    "typing.Generic": frozenset(dir(typing.Generic)),
}


def provided(bases: list[str], name: str) -> bool | None:
    """Whether the outside ``bases`` provide ``name``: True, False (every one of them is
    known and none lists it), None (one of them is not known)."""
    if any(base not in KNOWN_BASES for base in bases):
        return None
    return any(name in KNOWN_BASES[base] for base in bases)
