"""Lazy modules: packages whose ``__init__`` replaces itself with a ``_LazyModule``.

transformers, trl (and transformers' model packages) end their ``__init__.py`` with::

    sys.modules[__name__] = _LazyModule(__name__, <file>, <structure>, module_spec=__spec__,
                                        extra_objects={"__version__": __version__})

From then on the package's attributes are what the structure says, not what the file
binds: a name maps to the submodule that defines it, each submodule key (and its parents)
is importable, ``extra_objects`` are served as they are. The structure's shape changed over
transformers' releases (the cached wheels, 4.46.1 to 5.25.0):

* 4.46-4.51 (and trl, every release): a literal ``_import_structure`` dict, completed by
  item assignments and ``.extend`` under ``try/except OptionalDependencyNotAvailable/else``;
* model packages from 4.x (llama from 4.57 at the latest) and the top level from 4.52:
  ``define_import_structure(<folder>)``, the ``__all__`` of every file of the folder (and
  of its sub-folders), merged with the literal dict at the top level
  (``import_structure[frozenset({})].update(_import_structure)``);
* 5.0-5.3: legacy submodules served by ``_create_tokenization_alias(alias, target)``;
  5.4-5.20: ``_create_module_alias``, and every ``models/<m>/image_processing_<x>_fast``
  aliased to ``image_processing_<x>``; 5.21+: the ``_LEGACY_MODULE_ALIASES`` table and a
  finder for the same ``_fast`` image-processor modules (``pil_`` ones excepted);
* 5.0+: ``_LazyModule.__getattr__`` serves a legacy ``XTokenizerFast`` as ``XTokenizer``
  (and 5.4+ ``XImageProcessorFast`` as ``XImageProcessor``): read from the release's own
  ``_LazyModule`` (:func:`suffix_fallbacks`), not assumed from a version number; and a
  tokenizer the structure lacks (``ElectraTokenizer``, ``LongformerTokenizerFast``) as the
  one that shares its converter in ``convert_slow_tokenizer.SLOW_TO_FAST_CONVERTERS``
  (``BertTokenizer``, ``RobertaTokenizer``), where that ``__getattr__`` reads the table
  (:func:`converts_tokenizers`, :func:`converter_candidates`).

What define_import_structure reads is a folder listing, which a loader of single files
cannot give: the folder's ``__init__`` mirrors it for type checkers (``if TYPE_CHECKING:
from .modeling_llama import *``, generated from the folder by transformers'
``utils/check_inits.py``), and that mirror is what :class:`~canary.symbols.exports.Resolver`
enumerates.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping
from dataclasses import dataclass, field

from canary.codeindex import Effect, Module, normalised_text
from canary.symbols.effects import build, effect_text

# Every piece of code below is compared with index text, which the running Python printed:
# each passes through normalised_text, so it reads as that Python prints it.

# Steps of the structure that are not literal but known not to change which names it
# holds (so they do not make it incomplete).
_NO_OPS = frozenset(
    map(
        normalised_text,
        (
            # 4.52+: the literal dict turned into sets, to merge with define_import_structure's.
            "_import_structure = {k: set(v) for k, v in _import_structure.items()}",
            # 5.21+: the legacy module names join the structure; they are served as aliases.
            "_import_structure.setdefault(_alias, set())",
        ),
    )
)
# Callees that register one legacy submodule alias: (f"{__name__}.<alias>", ".<target>").
_ALIAS_FUNCTIONS = frozenset({"_create_tokenization_alias", "_create_module_alias"})  # 5.0-5.20
_ALIAS_TABLE = "_LEGACY_MODULE_ALIASES"  # 5.21+: {alias: target}
# The fast image-processor modules: a loop calling _create_module_alias on
# f"{__name__}.models.{_model}.{_module}_fast" (5.4-5.20), then this compiled pattern (5.21+).
_FAST_IMAGE_LOOP = normalised_text("f'{__name__}.models.{_model}.{_module}_fast'")
_INSTALLED_AS = normalised_text("sys.modules[__name__]")
_FAST_IMAGE_PATTERN = "_LEGACY_FAST_IMAGE_PROCESSOR_MODULE"
# ``name.endswith(suffix)`` tests in _LazyModule.__getattr__ and the name served instead.
_SUFFIX_FALLBACKS = (("ImageProcessorFast", "ImageProcessor"), ("TokenizerFast", "Tokenizer"))


@dataclass(frozen=True)
class LazyModule:
    """What a ``_LazyModule`` serves, read from the ``__init__`` that installs it. Keys are
    submodule names relative to the package ("trainer", "models.llama")."""

    factory: str  # the callee as written, "_LazyModule": its __getattr__ has the fallbacks
    names: Mapping[str, str] = field(default_factory=dict)  # name -> submodule key
    modules: frozenset[str] = frozenset()  # submodule keys and their parents
    folders: tuple[str, ...] = ()  # read by define_import_structure: "" (its own), "models"
    objects: frozenset[str] = frozenset()  # extra_objects: bound in the __init__ itself
    aliases: Mapping[str, str] = field(default_factory=dict)  # legacy submodule -> submodule
    fast_image_modules: bool = False  # models.<m>.image_processing_<x>_fast -> ..._<x>
    unevaluated: tuple[str, ...] = ()  # steps of the structure not understood

    def alias(self, key: str) -> str | None:
        """The submodule a legacy submodule key stands for, or None."""
        if key in self.aliases:
            return self.aliases[key]
        parts = key.split(".")
        if self.fast_image_modules and len(parts) == 3 and parts[0] == "models":
            stem = parts[2]
            if stem.startswith("image_processing_") and stem.endswith("_fast"):
                return f"models.{parts[1]}.{stem.removesuffix('_fast')}"
        return None


def lazy_module(module: Module) -> LazyModule | None:
    """The lazy module ``module`` installs as itself, or None when it installs none."""
    call = _installed(module)
    if call is None:
        return None
    factory = ast.unparse(call.func)
    if len(call.args) < 3:
        return LazyModule(factory, unevaluated=(ast.unparse(call),))
    structure = _Structure(module)
    structure.read(call.args[2])
    objects: frozenset[str] = frozenset()
    for keyword in call.keywords:
        if keyword.arg != "extra_objects":
            continue
        keys = keyword.value.keys if isinstance(keyword.value, ast.Dict) else [None]
        if all(isinstance(k, ast.Constant) and isinstance(k.value, str) for k in keys):
            objects = frozenset(k.value for k in keys)  # type: ignore[union-attr]
        else:
            structure.unevaluated.append(f"extra_objects={ast.unparse(keyword.value)}")
    aliases, fast = _aliases(module)
    modules = set(structure.modules)
    for key in structure.modules:
        modules.update(key.rsplit(".", i)[0] for i in range(key.count(".") + 1))
    return LazyModule(
        factory,
        structure.names,
        frozenset(modules),
        tuple(structure.folders),
        objects,
        aliases,
        fast,
        tuple(structure.unevaluated),
    )


def suffix_fallbacks(getattr_source: str) -> tuple[tuple[str, str], ...]:
    """The (suffix, replacement) pairs a ``_LazyModule.__getattr__`` serves a missing name
    by: ``XTokenizerFast`` as ``XTokenizer`` where its text tests ``name.endswith(...)``."""
    return tuple(
        (suffix, replacement)
        for suffix, replacement in _SUFFIX_FALLBACKS
        if f'name.endswith("{suffix}")' in getattr_source
        or f"name.endswith('{suffix}')" in getattr_source
    )


def converts_tokenizers(getattr_source: str) -> bool:
    """Whether a ``_LazyModule.__getattr__`` serves a tokenizer name its structure lacks
    through ``SLOW_TO_FAST_CONVERTERS`` (5.0+)."""
    return "SLOW_TO_FAST_CONVERTERS" in getattr_source and any(
        f"name.endswith({quote}Tokenizer{quote})" in getattr_source for quote in "\"'"
    )


def converter_candidates(name: str, table: Mapping[str, str]) -> tuple[str, ...]:
    """The tokenizers ``__getattr__`` tries, in order, for a ``name`` it lacks, from the
    table of tokenizer -> converter class name: the converter's own (``BertConverter`` ->
    ``BertTokenizer``), then every other one that shares it; () where it has no converter."""
    lookup = name.removesuffix("Fast")
    converter = table.get(lookup)
    if converter is None:
        return ()
    preferred = f"{converter.replace('Converter', '')}Tokenizer"
    others = [t for t, c in table.items() if c == converter and t not in (lookup, preferred)]
    return (preferred, *others)


def converter_table(value: str) -> dict[str, str] | None:
    """``SLOW_TO_FAST_CONVERTERS``' literal (``{"BertTokenizer": BertConverter, ...}``) as
    tokenizer -> converter name; None: not a literal of that shape."""
    try:
        node = ast.parse(value, mode="eval").body
    except SyntaxError:
        return None
    if not isinstance(node, ast.Dict):
        return None
    table = {}
    for key, converter in zip(node.keys, node.values, strict=True):
        if not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
            return None
        if not isinstance(converter, ast.Name):
            return None
        table[key.value] = converter.id
    return table


def _installed(module: Module) -> ast.Call | None:
    for effect in module.effects:
        if effect.target == _INSTALLED_AS and effect.op == "=":
            node = ast.parse(effect.value, mode="eval").body
            if isinstance(node, ast.Call) and ast.unparse(node.func).endswith("_LazyModule"):
                return node
    return None


class _Structure:
    """The import structure a lazy module is given, read from the steps that build it."""

    def __init__(self, module: Module) -> None:
        self.module = module
        self.names: dict[str, str] = {}
        self.modules: set[str] = set()
        self.folders: list[str] = []
        self.unevaluated: list[str] = []
        self._seen: set[str] = set()

    def read(self, node: ast.expr) -> None:
        folder = _defined_folder(node)
        if folder is not None:
            self.folders.append(folder)
            return
        if not isinstance(node, ast.Name):
            self.unevaluated.append(ast.unparse(node))
            return
        if node.id in self._seen:
            return
        self._seen.add(node.id)
        built = build(self.module, node.id, lambda effect: self._known(node.id, effect))
        if built is None:
            self.unevaluated.append(f"{node.id} is not bound at module level")
            return
        self.unevaluated.extend(built.unevaluated)
        if not isinstance(built.value, dict):
            if built.value is not None:
                self.unevaluated.append(f"{node.id} is not a dict")
            return
        for key, values in built.value.items():
            if not isinstance(key, str):
                self.unevaluated.append(f"{node.id}[{key!r}]")
                continue
            self.modules.add(key)
            for name in values if isinstance(values, (list, set, tuple)) else ():
                if isinstance(name, str):
                    self.names[name] = key

    def _known(self, variable: str, effect: Effect) -> bool:
        """A step that is not literal but understood: handled here, not evaluated."""
        if effect_text(effect) in _NO_OPS:
            return True
        value = ast.parse(effect.value, mode="eval").body
        folder = _defined_folder(value)
        if effect.target == variable and effect.op == "=" and folder is not None:
            self.folders.append(folder)
            return True
        # import_structure[frozenset({})].update(_import_structure): the literal part joins
        # the folder's structure, with no backend required.
        if (
            effect.op == "call"
            and effect.target == normalised_text(f"{variable}[frozenset({{}})].update")
            and isinstance(value, ast.Call)
            and len(value.args) == 1
        ):
            self.read(value.args[0])
            return True
        return False


def _defined_folder(node: ast.expr) -> str | None:
    """The folder a ``define_import_structure(...)`` call reads, relative to the package
    ("" for ``_file``/``__file__``, "models" for ``Path(__file__).parent / "models"``), or
    None when ``node`` is no such call."""
    if not (
        isinstance(node, ast.Call) and ast.unparse(node.func).endswith("define_import_structure")
    ):
        return None
    if not node.args:
        return None
    path = node.args[0]
    parts: list[str] = []
    while isinstance(path, ast.BinOp) and isinstance(path.op, ast.Div):
        if not (isinstance(path.right, ast.Constant) and isinstance(path.right.value, str)):
            return None
        parts.insert(0, path.right.value)
        path = path.left
    return "/".join(parts)


def _aliases(module: Module) -> tuple[dict[str, str], bool]:
    aliases: dict[str, str] = {}
    fast = _FAST_IMAGE_PATTERN in module.assignments
    table = module.assignments.get(_ALIAS_TABLE)
    if table is not None and isinstance(table.literal, dict):
        aliases.update({str(k): str(v) for k, v in table.literal.items()})
    for effect in module.effects:
        if effect.op != "call" or effect.target not in _ALIAS_FUNCTIONS:
            continue
        call = ast.parse(effect.value, mode="eval").body
        if not isinstance(call, ast.Call) or len(call.args) != 2:
            continue
        alias, target = call.args
        if ast.unparse(alias) == _FAST_IMAGE_LOOP:
            fast = True
            continue
        key = _submodule_of_name(alias)
        if key is not None and isinstance(target, ast.Constant) and isinstance(target.value, str):
            aliases[key] = target.value.lstrip(".")
    return aliases, fast


def _submodule_of_name(node: ast.expr) -> str | None:
    """``f"{__name__}.tokenization_utils_fast"`` -> "tokenization_utils_fast"."""
    if not (isinstance(node, ast.JoinedStr) and len(node.values) == 2):
        return None
    head, tail = node.values
    if not (isinstance(head, ast.FormattedValue) and ast.unparse(head.value) == "__name__"):
        return None
    if isinstance(tail, ast.Constant) and isinstance(tail.value, str) and tail.value[:1] == ".":
        return tail.value[1:]
    return None
