"""Classes across the files of one package: the static MRO and where a member comes from.

A class's bases are resolved through the imports of the file that defines it (across
files, through re-exports and lazy modules), and linearised with C3 as Python does. A base
outside the package stays in the MRO as its dotted name ("torch.nn.Module"): a member none
of the package's classes binds is then *unknown*, except the well-known members of
``object`` and of ``torch.nn.Module`` (:data:`NN_MODULE_MEMBERS`), which count as found.

Members, first match along the MRO (the class's own body first, before its bases are
even read): methods (``property`` ones reported as properties),
class attributes, nested classes, annotation-only fields of dataclass-like classes, names
imported in the class body (a function imported there is a method); then
instance attributes assigned in any method of the MRO (``self.x = ...``). A class with a
``__getattr__`` in its MRO (a PEFT wrapper forwarding to the model it wraps) may serve any
name: a miss there is unknown.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from canary.codeindex import Class, Function, Module
from canary.symbols.exports import Resolver
from canary.symbols.lookup import (
    CLASS,
    CLASS_ATTRIBUTE,
    EXTERNAL,
    FIELD,
    INHERITED,
    INSTANCE_ATTRIBUTE,
    MEMBER,
    METHOD,
    MODULE,
    NESTED_CLASS,
    PROPERTY,
    Lookup,
    closest,
    member_miss,
    missing,
    unknown,
)
from canary.symbols.modules import dotted_of
from canary.symbols.outside import TORCH_VERSION, provided

# The bases outside the package whose members are well known, and those members.
NN_MODULE = frozenset({"torch.nn.Module", "torch.nn.modules.module.Module"})
# The bases outside the package that leave a class's attributes as its body binds them.
PLAIN_BASES = NN_MODULE | {"object", "builtins.object", "abc.ABC", "typing.Generic"}
NN_MODULE_MEMBERS = frozenset(
    {
        "forward", "__init__", "__call__", "__getattr__", "__setattr__", "__delattr__",
        "__dir__", "__setstate__", "training", "extra_repr", "_get_name", "_apply",
        "_call_impl", "_modules", "_parameters", "_buffers", "parameters", "named_parameters",
        "buffers", "named_buffers", "children", "named_children", "modules", "named_modules",
        "register_forward_hook", "register_forward_pre_hook", "register_full_backward_hook",
        "register_full_backward_pre_hook", "register_backward_hook", "register_buffer",
        "register_parameter", "register_module", "add_module", "get_submodule",
        "get_parameter", "get_buffer", "state_dict", "load_state_dict",
        "_load_from_state_dict", "to", "to_empty", "cuda", "cpu", "float", "half", "double",
        "bfloat16", "type", "train", "eval", "requires_grad_", "zero_grad", "apply",
        "share_memory",
    }
)  # fmt: skip
OBJECT_MEMBERS = frozenset(dir(object)) | {
    "__dict__",
    "__module__",
    "__weakref__",
    "__name__",
    "__qualname__",
}
_PROPERTIES = frozenset(
    {"property", "functools.cached_property", "cached_property", "abc.abstractproperty"}
)
_DATACLASS_LIKE = ("dataclass", "define", "frozen", "attrs", "struct")
_FIELD_BASES = frozenset({"NamedTuple", "TypedDict", "BaseModel"})
# What @dataclasses.dataclass sets on every class it decorates (Python 3.10 to 3.13).
_DATACLASS_DUNDERS = frozenset({"__dataclass_fields__", "__dataclass_params__"})


@dataclass(frozen=True)
class _Entry:
    """One class of an MRO: in the package (``cls`` set) or outside it (named only)."""

    name: str  # dotted: "transformers.trainer.Trainer", "torch.nn.Module"
    path: str | None = field(default=None, compare=False)
    cls: Class | None = field(default=None, compare=False)


class Classes:
    """MROs and members of the package's classes, each computed once."""

    def __init__(self, resolver: Resolver) -> None:
        self.resolver = resolver
        self._mros: dict[tuple[str, str], tuple[_Entry, ...] | Lookup] = {}

    def mro(self, path: str, cls: Class) -> tuple[_Entry, ...] | Lookup:
        """The class's C3 linearisation, or the unknown Lookup saying why there is none."""
        key = (path, cls.qualname)
        if key in self._mros:
            return self._mros[key]
        self._mros[key] = unknown(
            MEMBER, path, cls.qualname, f"{cls.qualname} inherits from itself"
        )
        result = self._linearise(path, cls)
        self._mros[key] = result
        return result

    def member(self, path: str, cls: Class, name: str) -> Lookup:
        # The class itself comes first in every MRO: what its own body binds is found
        # there, whatever its bases are (reading them may mean the largest files of the
        # package: modeling_utils.py, generation/utils.py).
        me = _Entry(f"{dotted_of(path)}.{cls.qualname}", path, cls)
        if (own := _declared(me, name) or self._imported(me, name)) is not None:
            return own
        mro = self.mro(path, cls)
        if isinstance(mro, Lookup):
            return mro
        inside = [e for e in mro if e.cls is not None]
        for entry in _searchable(mro, name):
            found = _declared(entry, name) or self._imported(entry, name)
            if found is not None:
                return found
        for entry in inside:
            found = _instance_attribute(entry, name)
            if found is not None:
                return found
        return _not_declared(path, cls, name, mro)

    def _imported(self, entry: _Entry, name: str) -> Lookup | None:
        """A name an import in the class body binds: a method when it is a function."""
        cls = entry.cls
        assert cls is not None
        assert entry.path is not None
        imported = cls.imports.get(name)
        module = self.resolver.files.load(entry.path)
        if imported is None or module is None:
            return None
        target = self.resolver.follow(module, imported)
        qualname = f"{cls.qualname}.{name}"
        why = f"{imported.statement} in the class body"
        if target.found is True and target.function is not None:
            return Lookup(True, METHOD, target.path, qualname, why, function=target.function)
        return Lookup(True, CLASS_ATTRIBUTE, entry.path, qualname, why)

    def _linearise(self, path: str, cls: Class) -> tuple[_Entry, ...] | Lookup:
        me = _Entry(f"{dotted_of(path)}.{cls.qualname}", path, cls)
        merged: list[list[_Entry]] = []
        direct: list[_Entry] = []
        for text in cls.bases:
            base = self.base(path, text)
            if isinstance(base, Lookup):
                return base
            if base.name in ("object", "builtins.object"):
                continue
            if base.cls is not None and base.path is not None:
                linear = self.mro(base.path, base.cls)
                if isinstance(linear, Lookup):
                    return linear
                merged.append(list(linear))
            else:
                merged.append([base])
            direct.append(base)
        merged.append(direct)
        result = [me]
        while any(merged):
            head = next(
                (
                    seq[0]
                    for seq in merged
                    if seq and not any(seq[0] in other[1:] for other in merged)
                ),
                None,
            )
            if head is None:
                return unknown(
                    MEMBER, path, cls.qualname, f"no consistent MRO for {cls.qualname}'s bases"
                )
            result.append(head)
            merged = [[e for e in seq if e != head] for seq in merged]
        return tuple(result)

    def base(self, path: str, text: str) -> _Entry | Lookup:
        """A base class as written in ``path`` ("nn.Module", "Generic[T]"), resolved."""
        parts = _dotted(text)
        module = self.resolver.files.load(path)
        if parts is None or module is None or not _binds(module, parts[0]):
            # A call (namedtuple(...)) or a builtin (Exception): outside the package.
            return _Entry(text)
        found = self.resolver.attribute(dotted_of(path), parts[0])
        for i, part in enumerate(parts[1:], start=1):
            if found.found is not True:
                break
            if found.kind == EXTERNAL:
                return _Entry(".".join([found.why, *parts[i:]]))
            found = self._inside(found, part)
        if found.found is True and found.kind == EXTERNAL:
            return _Entry(found.why)
        if found.found is True and found.kind == CLASS and found.cls is not None and found.path:
            return _Entry(f"{dotted_of(found.path)}.{found.qualname}", found.path, found.cls)
        if found.found is False:
            return missing(MEMBER, path, text, f"the base {text!r} is not there: {found.why}")
        why = found.why or f"it is a {found.kind}"
        return unknown(MEMBER, path, text, f"the base {text!r} is not a class we can read: {why}")

    def _inside(self, found: Lookup, part: str) -> Lookup:
        """``part`` of a module or class that was found: one step of a dotted base."""
        if found.kind == MODULE and found.path is not None:
            return self.resolver.attribute(dotted_of(found.path), part)
        if found.kind == CLASS and found.cls is not None and part in found.cls.classes:
            qualname = f"{found.qualname}.{part}"
            return Lookup(True, CLASS, found.path, qualname, cls=found.cls.classes[part])
        return unknown(MEMBER, found.path, found.qualname, f"cannot follow {part!r} there")


def _searchable(mro: tuple[_Entry, ...], name: str) -> list[_Entry]:
    """The package's classes whose own bindings Python consults for ``name``, in MRO
    order: those before the first base outside the package that may bind it. A mixin
    listed after ``transformers.Trainer`` never serves ``compute_loss``: Trainer's wins.
    ``torch.nn.Module`` is passed for a name its member table does not list (transformers'
    models put their mixins after it)."""
    searchable = []
    for entry in mro:
        if entry.cls is not None:
            searchable.append(entry)
        elif not (entry.name in NN_MODULE and name not in NN_MODULE_MEMBERS):
            break
    return searchable


def _not_declared(path: str, cls: Class, name: str, mro: tuple[_Entry, ...]) -> Lookup:
    """A member no class of the package declares: inherited from a well-known base,
    undecidable, or missing."""
    inside = [e.cls for e in mro if e.cls is not None]
    outside = [e.name for e in mro if e.cls is None]
    qualname = f"{cls.qualname}.{name}"
    if (provider := _well_known(name, inside, outside)) is not None:
        return Lookup(True, INHERITED, path, qualname, provider)
    if name.startswith("__"):
        # Python and decorators add these (__dataclass_fields__, __match_args__, a
        # decorator's __backends): what the source binds does not list them.
        why = f"{name!r} is not bound in the source; Python or a decorator may add it"
        return unknown(MEMBER, path, qualname, why)
    forwarding = next((c for c in inside if "__getattr__" in c.methods), None)
    annotated = next((c for c in inside if name in c.attributes), None)
    unresolved = outside
    known = provided(outside, name) if outside else None
    bound = {n for c in inside for n in (*c.methods, *c.attributes, *c.classes)}
    if known is True and forwarding is None:
        return Lookup(True, INHERITED, path, qualname, ", ".join(outside))
    if forwarding is not None:
        why = f"{forwarding.qualname}.__getattr__ may serve {name!r}"
    elif annotated is not None:
        why = f"{annotated.qualname} only annotates {name!r}; an instance may set it"
    elif unresolved and (known is not False or name in bound):
        # (bound by a class after an outside base the search stopped at: not read here)
        why = f"not in the package's classes; may come from {', '.join(unresolved)}"
    else:
        names = bound
        chain = " -> ".join(e.name.rpartition(".")[2] for e in mro)
        none = ""
        if outside:  # each of them known: what they provide is listed in full
            none = f", and {', '.join(outside)} provide none (nn.Module: torch {TORCH_VERSION})"
        why = member_miss(name, chain, f"{none}{closest(name, names)}")
        return missing(MEMBER, path, qualname, why)
    return unknown(MEMBER, path, qualname, why)


def dynamic(name: str, cls: Class | None) -> bool:
    """Whether an instance of a class with this class (or base outside the package:
    ``name``) in its MRO may hold attributes its source does not bind by ``self.x = ...``,
    or its call return another object: ``torch.nn.Module`` (registered submodules,
    parameters and buffers), ``__new__``, ``__getattribute__``, a method that writes
    ``setattr(self, ...)`` or the instance's ``__dict__``."""
    if cls is None:
        return name in NN_MODULE
    if "__new__" in cls.methods or "__getattribute__" in cls.methods:
        return True
    return any("setattr(" in m.source or "__dict__" in m.source for m in cls.methods.values())


def _dotted(text: str) -> list[str] | None:
    """``"nn.Module"`` -> ["nn", "Module"]; ``Generic[T]`` -> ["Generic"]; None for
    anything else (a call)."""
    try:
        node = ast.parse(text, mode="eval").body
    except SyntaxError:
        return None
    if isinstance(node, ast.Subscript):  # Generic[T], Protocol[...]: the origin class
        node = node.value
    parts: list[str] = []
    while isinstance(node, ast.Attribute):
        parts.insert(0, node.attr)
        node = node.value
    if not isinstance(node, ast.Name):
        return None
    return [node.id, *parts]


def _binds(module: Module, name: str) -> bool:
    return (
        name in module.classes
        or name in module.functions
        or name in module.assignments
        or name in module.imports
        or bool(module.star_imports)
    )


def _declared(entry: _Entry, name: str) -> Lookup | None:
    cls = entry.cls
    assert cls is not None
    qualname = f"{cls.qualname}.{name}"
    if name in cls.methods:
        method = cls.methods[name]
        kind = PROPERTY if _PROPERTIES.intersection(method.decorators) else METHOD
        return Lookup(True, kind, entry.path, qualname, function=method)
    if name in cls.classes:
        return Lookup(True, NESTED_CLASS, entry.path, qualname, cls=cls.classes[name])
    attribute = cls.attributes.get(name)
    if attribute is None:
        return None
    if attribute.value is not None:
        return Lookup(True, CLASS_ATTRIBUTE, entry.path, qualname)
    if _dataclass_like(cls):
        return Lookup(True, FIELD, entry.path, qualname)
    return None  # only annotated: an instance may set it (looked for next)


def _instance_attribute(entry: _Entry, name: str) -> Lookup | None:
    cls = entry.cls
    assert cls is not None
    for method in cls.methods.values():
        receiver = _receiver(method)
        # The text first: walking a body is a parse, and most methods never name it.
        if not receiver or name not in method.source:
            continue
        if method.assignments_to(f"{receiver}.{name}"):
            return Lookup(
                True,
                INSTANCE_ATTRIBUTE,
                entry.path,
                f"{cls.qualname}.{name}",
                f"assigned in {method.qualname}",
            )
    return None


def _receiver(method: Function) -> str | None:
    """The name of a method's instance parameter (``self``), None for a static method."""
    if "staticmethod" in method.decorators or "classmethod" in method.decorators:
        return None
    params = method.signature.params
    return params[0].name if params else None


def _well_known(name: str, inside: list[Class], outside: list[str]) -> str | None:
    """What provides ``name`` that every reader knows: ``object``, ``torch.nn.Module``'s
    common members where it is a base, what ``@dataclass`` sets on a class it decorates."""
    if name in OBJECT_MEMBERS:
        return "object"
    if name in NN_MODULE_MEMBERS and NN_MODULE.intersection(outside):
        return "torch.nn.Module"
    if name in _DATACLASS_DUNDERS and any(_decorated_dataclass(c) for c in inside):
        return "dataclasses.dataclass"
    return None


def _decorated_dataclass(cls: Class) -> bool:
    return any(d.split("(")[0].rpartition(".")[2] == "dataclass" for d in cls.decorators)


def _dataclass_like(cls: Class) -> bool:
    if any(d.split("(")[0].rpartition(".")[2] in _DATACLASS_LIKE for d in cls.decorators):
        return True
    return any(b.rpartition(".")[2] in _FIELD_BASES for b in cls.bases)


__all__ = ["CLASS", "PLAIN_BASES", "Classes", "dynamic"]
