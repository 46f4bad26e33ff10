"""Lazy modules, one tree per shape transformers' (and trl's) __init__ files had.

Each tree is a small copy of the real files' shape (transformers 4.46.1, 4.57.6, 5.0.0,
5.4.0 and 5.25.0; trl 1.16.0): the statements that build the lazy structure are kept as
upstream writes them, the lists are cut down.
"""

from __future__ import annotations

import textwrap

import pytest
from symbols_trees import package

from canary.codeindex import parse_module
from canary.symbols.lazy import lazy_module, suffix_fallbacks

LAZY_4 = """
class _LazyModule(ModuleType):
    def __getattr__(self, name: str) -> Any:
        if name in self._objects:
            return self._objects[name]
        if name in self._class_to_module.keys():
            module = self._get_module(self._class_to_module[name])
            value = getattr(module, name)
        elif name in self._modules:
            value = self._get_module(name)
        else:
            raise AttributeError(f"module {self.__name__} has no attribute {name}")
        return value
"""
# 5.0+: a legacy XTokenizerFast is served as XTokenizer; 5.4+ XImageProcessorFast too.
LAZY_5 = LAZY_4.replace(
    "        else:\n            raise",
    """        else:
            if name.endswith("TokenizerFast"):
                fallback_name = name[:-4]
                if fallback_name in self._class_to_module:
                    module = self._get_module(self._class_to_module[fallback_name])
                    return getattr(module, fallback_name)
            if name.endswith("ImageProcessorFast"):
                fallback_name = name[:-4]
                if fallback_name in self._class_to_module:
                    module = self._get_module(self._class_to_module[fallback_name])
                    return getattr(module, fallback_name)
            if name.endswith("Tokenizer") or name.endswith("TokenizerFast"):
                lookup_name = name[:-4] if name.endswith("TokenizerFast") else name
                from ..convert_slow_tokenizer import SLOW_TO_FAST_CONVERTERS

                if lookup_name in SLOW_TO_FAST_CONVERTERS:
                    converter_class = SLOW_TO_FAST_CONVERTERS[lookup_name]
                    converter_base_name = converter_class.__name__.replace("Converter", "")
                    candidate_names = [f"{converter_base_name}Tokenizer"]
                    for tokenizer_name, tokenizer_converter in SLOW_TO_FAST_CONVERTERS.items():
                        if tokenizer_converter is converter_class and tokenizer_name != lookup_name:
                            candidate_names.append(tokenizer_name)
                    for candidate_name in candidate_names:
                        if candidate_name in self._class_to_module:
                            module = self._get_module(self._class_to_module[candidate_name])
                            return getattr(module, candidate_name)
            raise""",
)
# 5.0+: the tokenizers' converters, which that __getattr__ reads (cut down)
CONVERTERS = """
class LlamaConverter:
    pass


class GemmaConverter:
    pass


SLOW_TO_FAST_CONVERTERS = {
    "CodeLlamaTokenizer": LlamaConverter,
    "GemmaTokenizer": GemmaConverter,
    "LlamaTokenizer": LlamaConverter,
}
"""

COMMON = {
    "transformers/utils/__init__.py": """
        from .import_utils import OptionalDependencyNotAvailable, _LazyModule, is_torch_available
        from . import logging
    """,
    "transformers/utils/logging.py": "def get_logger(name):\n    pass\n",
    "transformers/trainer.py": """
        class Trainer:
            def compute_loss(self, model, inputs):
                pass
    """,
    "transformers/configuration_utils.py": "class PretrainedConfig:\n    pass\n",
    "transformers/models/llama/configuration_llama.py": """
        class LlamaConfig:
            pass


        __all__ = ["LlamaConfig"]
    """,
    "transformers/models/llama/modeling_llama.py": """
        class LlamaAttention:
            def forward(self, hidden_states):
                pass


        class LlamaForCausalLM:
            pass


        __all__ = ["LlamaForCausalLM"]
    """,
    "transformers/models/llama/tokenization_llama.py": """
        class LlamaTokenizer:
            pass


        __all__ = ["LlamaTokenizer"]
    """,
}

# transformers 4.46.1: literal structures everywhere, completed under try/else.
INIT_4_46 = """
    __version__ = "4.46.1"
    from typing import TYPE_CHECKING

    from .utils import OptionalDependencyNotAvailable, _LazyModule, is_torch_available

    _import_structure = {
        "configuration_utils": ["PretrainedConfig"],
        "models": [],
        "models.llama": ["LlamaConfig"],
        "utils": ["logging"],
    }

    try:
        if not is_torch_available():
            raise OptionalDependencyNotAvailable()
    except OptionalDependencyNotAvailable:
        from .utils import dummy_pt_objects

        _import_structure["utils.dummy_pt_objects"] = [
            name for name in dir(dummy_pt_objects) if not name.startswith("_")
        ]
    else:
        _import_structure["models.llama"].extend(["LlamaForCausalLM"])
        _import_structure["trainer"] = ["Trainer"]

    if TYPE_CHECKING:
        from .configuration_utils import PretrainedConfig
        from .trainer import Trainer, TrainerOnlyTyped
    else:
        import sys

        sys.modules[__name__] = _LazyModule(
            __name__,
            globals()["__file__"],
            _import_structure,
            module_spec=__spec__,
            extra_objects={"__version__": __version__},
        )
"""
LLAMA_4_46 = """
    from typing import TYPE_CHECKING

    from ...utils import OptionalDependencyNotAvailable, _LazyModule, is_torch_available

    _import_structure = {
        "configuration_llama": ["LlamaConfig"],
    }

    try:
        if not is_torch_available():
            raise OptionalDependencyNotAvailable()
    except OptionalDependencyNotAvailable:
        pass
    else:
        _import_structure["modeling_llama"] = [
            "LlamaForCausalLM",
        ]

    if TYPE_CHECKING:
        from .configuration_llama import LlamaConfig
    else:
        import sys

        sys.modules[__name__] = _LazyModule(
            __name__, globals()["__file__"], _import_structure, module_spec=__spec__
        )
"""
# transformers 4.57.6 (model packages from 4.x, the top level from 4.52): the folder's
# __all__ through define_import_structure, mirrored for type checkers.
LLAMA_4_57 = """
    from typing import TYPE_CHECKING

    from ...utils import _LazyModule
    from ...utils.import_utils import define_import_structure


    if TYPE_CHECKING:
        from .configuration_llama import *
        from .modeling_llama import *
        from .tokenization_llama import *
        from .tokenization_llama_fast import *
    else:
        import sys

        _file = globals()["__file__"]
        sys.modules[__name__] = _LazyModule(
            __name__, _file, define_import_structure(_file), module_spec=__spec__
        )
"""
MODELS = """
    from typing import TYPE_CHECKING

    from ..utils import _LazyModule
    from ..utils.import_utils import define_import_structure


    if TYPE_CHECKING:
        from .llama import *
        from .xlstm import *
    else:
        import sys

        _file = globals()["__file__"]
        sys.modules[__name__] = _LazyModule(
            __name__, _file, define_import_structure(_file), module_spec=__spec__
        )
"""
# transformers 5.0.0's xlstm: the mirror's lines lost their dots (they never run).
XLSTM = {
    "transformers/models/xlstm/__init__.py": """
        from typing import TYPE_CHECKING

        from ...utils import _LazyModule
        from ...utils.import_utils import define_import_structure

        if TYPE_CHECKING:
            from configuration_xlstm import *
        else:
            import sys

            _file = globals()["__file__"]
            sys.modules[__name__] = _LazyModule(
                __name__, _file, define_import_structure(_file), module_spec=__spec__
            )
    """,
    "transformers/models/xlstm/configuration_xlstm.py": """
        class xLSTMConfig:
            pass


        __all__ = ["xLSTMConfig"]
    """,
}
TOP_4_57_HEAD = """
    __version__ = "4.57.6"
    from pathlib import Path
    from typing import TYPE_CHECKING

    from .utils import OptionalDependencyNotAvailable, _LazyModule, is_torch_available
    from .utils.import_utils import define_import_structure

    _import_structure = {
        "configuration_utils": ["PretrainedConfig"],
        "utils": ["logging"],
    }

    try:
        if not is_torch_available():
            raise OptionalDependencyNotAvailable()
    except OptionalDependencyNotAvailable:
        from .utils import dummy_pt_objects

        _import_structure["utils.dummy_pt_objects"] = [
            name for name in dir(dummy_pt_objects) if not name.startswith("_")
        ]
    else:
        _import_structure["trainer"] = ["Trainer"]

    if TYPE_CHECKING:
        from .models import *
        from .trainer import Trainer
    else:
        import sys

        _import_structure = {k: set(v) for k, v in _import_structure.items()}

        import_structure = define_import_structure(
            Path(__file__).parent / "models", prefix="models"
        )
        import_structure[frozenset({})].update(_import_structure)

        sys.modules[__name__] = _LazyModule(
            __name__,
            globals()["__file__"],
            import_structure,
            module_spec=__spec__,
            extra_objects={"__version__": __version__},
        )
"""
# transformers 5.0.0-5.3.0: legacy tokenization modules, one call each.
TAIL_5_0 = """
        def _create_tokenization_alias(alias: str, target: str) -> None:
            module = types.ModuleType(alias)
            sys.modules[alias] = module
            setattr(sys.modules[__name__], alias.rsplit(".", 1)[-1], module)

        _create_tokenization_alias(
            f"{__name__}.tokenization_utils_fast", ".tokenization_utils_tokenizers"
        )
"""
# transformers 5.4.0-5.20.x: renamed, and every image processor gets a _fast alias module.
TAIL_5_4 = """
        def _create_module_alias(alias: str, target: str) -> None:
            module = types.ModuleType(alias)
            sys.modules[alias] = module

        _create_module_alias(
            f"{__name__}.tokenization_utils_fast", ".tokenization_utils_tokenizers"
        )
        _create_module_alias(
            f"{__name__}.image_processing_utils_fast", ".image_processing_backends"
        )

        for _proc_file in sorted((Path(__file__).parent / "models").rglob("image_processing_*.py")):
            _model = _proc_file.parent.name
            _module = _proc_file.stem
            _target = f".models.{_model}.{_module}"
            _create_module_alias(f"{__name__}.models.{_model}.{_module}_fast", _target)
"""
# transformers 5.21.0+: a table, part of the structure, and a finder for the _fast modules.
TAIL_5_21 = """
        _LEGACY_MODULE_ALIASES = {
            "tokenization_utils_fast": "tokenization_utils_tokenizers",
            "image_processing_utils_fast": "image_processing_backends",
        }
        for _alias in _LEGACY_MODULE_ALIASES:
            _import_structure.setdefault(_alias, set())
        _LEGACY_FAST_IMAGE_PROCESSOR_MODULE = re.compile(
            rf"{re.escape(__name__)}\\.models\\.(\\w+)\\.image_processing_(?!pil_)(\\w+)_fast"
        )
"""
FIVE = {
    "transformers/tokenization_utils_tokenizers.py": """
        class TokenizersBackend:
            pass


        PreTrainedTokenizerFast = TokenizersBackend
    """,
    "transformers/image_processing_backends.py": "class TorchvisionBackend:\n    pass\n",
    "transformers/models/llava/__init__.py": LLAMA_4_57.replace(
        "from .configuration_llama import *", "from .image_processing_llava import *"
    ),
    "transformers/models/llava/image_processing_llava.py": """
        class LlavaImageProcessor:
            pass


        __all__ = ["LlavaImageProcessor"]
    """,
}


def _top(head: str, tail: str = "") -> str:
    # The tails run inside the same ``else:`` as the _LazyModule line.
    return textwrap.dedent(head) + textwrap.indent(textwrap.dedent(tail), "    ")


def transformers_4_46():
    return package(
        "transformers",
        {
            **COMMON,
            "transformers/__init__.py": INIT_4_46,
            "transformers/utils/import_utils.py": LAZY_4,
            "transformers/models/__init__.py": "from . import llama\n",
            "transformers/models/llama/__init__.py": LLAMA_4_46,
        },
    )


def transformers_4_57(
    *,
    listed: bool = False,
    extra: dict[str, str] | None = None,
    texts_read: list[str] | None = None,
):
    return package(
        "transformers",
        {
            **COMMON,
            **XLSTM,
            "transformers/__init__.py": TOP_4_57_HEAD,
            "transformers/utils/import_utils.py": LAZY_4,
            "transformers/models/__init__.py": MODELS,
            "transformers/models/llama/__init__.py": LLAMA_4_57,
            **(extra or {}),
        },
        listed=listed,
        texts_read=texts_read,
    )


def transformers_5(tail: str, *, listed: bool = True):
    head = TOP_4_57_HEAD.replace('"4.57.6"', '"5.0.0"')
    return package(
        "transformers",
        {
            **COMMON,
            **XLSTM,
            **FIVE,
            "transformers/__init__.py": _top(head, tail),
            "transformers/utils/import_utils.py": LAZY_5,
            "transformers/convert_slow_tokenizer.py": CONVERTERS,
            "transformers/models/__init__.py": MODELS.replace("from .xlstm", "from .llava"),
            "transformers/models/llama/__init__.py": LLAMA_4_57,
        },
        listed=listed,
    )


def outcome(tree, dotted):
    answer = tree.lookup(dotted)
    return answer.found, answer.path


def test_4_46_literal_structures_completed_under_try_else():
    tree = transformers_4_46()
    assert outcome(tree, "transformers.Trainer") == (True, "transformers/trainer.py")
    assert outcome(tree, "transformers.Trainer.compute_loss") == (True, "transformers/trainer.py")
    llama = "transformers/models/llama/modeling_llama.py"
    assert outcome(tree, "transformers.LlamaForCausalLM") == (True, llama)
    assert outcome(tree, "transformers.models.llama.LlamaForCausalLM") == (True, llama)
    assert outcome(tree, "transformers.models.llama.modeling_llama.LlamaAttention.forward") == (
        True,
        llama,
    )
    assert outcome(tree, "transformers.__version__") == (True, "transformers/__init__.py")
    assert outcome(tree, "transformers.utils.logging.get_logger")[0] is True


def test_4_46_the_structure_not_the_type_checking_imports_says_what_exists():
    tree = transformers_4_46()
    typed = tree.lookup("transformers.TrainerOnlyTyped")
    assert typed.found is False
    assert "lazy import structure" in typed.why
    # The dummy objects under ``except`` are placeholders for the same names: left out.
    assert tree.lookup("transformers.dummy_pt_objects").found is False
    # 4.x's _LazyModule has no Fast fallback.
    assert tree.lookup("transformers.LlamaTokenizerFast").found is False


def test_4_57_define_import_structure_reads_the_folders_all_through_the_mirror():
    tree = transformers_4_57()
    assert outcome(tree, "transformers.LlamaForCausalLM") == (
        True,
        "transformers/models/llama/modeling_llama.py",
    )
    assert outcome(tree, "transformers.Trainer") == (True, "transformers/trainer.py")  # literal
    assert tree.lookup("transformers.__version__").found is True
    # Not in modeling_llama's __all__: not served at the top, but there in its module.
    # The mirror cannot prove the miss (it can be stale): unknown.
    attention = tree.lookup("transformers.LlamaAttention")
    assert attention.found is None
    assert "only a listing can prove" in attention.why
    assert tree.lookup("transformers.models.llama.modeling_llama.LlamaAttention").found is True
    # A mirror line without its dot still names the folder's file.
    assert outcome(tree, "transformers.xLSTMConfig") == (
        True,
        "transformers/models/xlstm/configuration_xlstm.py",
    )


def test_a_lister_makes_the_folder_exact_where_the_mirror_is_stale():
    tree = transformers_4_57(listed=True)
    assert tree.lookup("transformers.LlamaForCausalLM").found is True
    miss = tree.lookup("transformers.LlamaAttention")
    assert miss.found is False
    assert "lazy import structure has no 'LlamaAttention'" in miss.why
    # A model folder the mirror forgot (transformers 5.5.3's lighton_ocr) is still read.
    stale = package(
        "transformers",
        {
            **COMMON,
            "transformers/__init__.py": TOP_4_57_HEAD,
            "transformers/utils/import_utils.py": LAZY_4,
            "transformers/models/__init__.py": MODELS,  # lists llama and xlstm only
            "transformers/models/llama/__init__.py": LLAMA_4_57,
            "transformers/models/lighton_ocr/__init__.py": LLAMA_4_57.replace(
                "llama", "lighton_ocr"
            ),
            "transformers/models/lighton_ocr/modeling_lighton_ocr.py": (
                "class LightOnOcrModel:\n    pass\n\n\n__all__ = ['LightOnOcrModel']\n"
            ),
        },
        listed=True,
    )
    assert stale.lookup("transformers.LightOnOcrModel").found is True


def test_5_0_tokenization_aliases_and_the_tokenizer_fast_fallback():
    tree = transformers_5(TAIL_5_0)
    legacy = tree.lookup("transformers.tokenization_utils_fast.PreTrainedTokenizerFast")
    assert (legacy.found, legacy.path) == (True, "transformers/tokenization_utils_tokenizers.py")
    fast = tree.lookup("transformers.LlamaTokenizerFast")
    assert (fast.found, fast.qualname) == (True, "LlamaTokenizer")
    assert "served as LlamaTokenizer" in fast.why
    assert tree.lookup("transformers.image_processing_utils_fast").found is False  # 5.4+
    # 5.0's alias forwards names as they are: no renamed Fast classes.
    old = "transformers.tokenization_utils_fast.TokenizersBackendFast"
    assert tree.lookup(old).found is False


def test_5_0_a_tokenizer_the_structure_lacks_is_served_by_its_converters_tokenizer():
    # simpletransformers' ElectraTokenizerFast: BertConverter's BertTokenizer on 5.x
    tree = transformers_5(TAIL_5_0)
    for name in ("CodeLlamaTokenizer", "CodeLlamaTokenizerFast"):
        served = tree.lookup(f"transformers.{name}")
        assert (served.found, served.qualname) == (True, "LlamaTokenizer")
        assert "CodeLlamaTokenizer shares LlamaConverter" in served.why
    # no tokenizer of its converter is in the structure: the miss stands
    assert tree.lookup("transformers.GemmaTokenizer").found is False
    # a name of no converter, and 4.x's __getattr__, which has no such path
    assert tree.lookup("transformers.OtherTokenizer").found is False
    assert transformers_4_57().lookup("transformers.CodeLlamaTokenizer").found is not True


def test_5_4_module_aliases_and_the_fast_image_processor_modules():
    tree = transformers_5(TAIL_5_4)
    assert tree.lookup("transformers.image_processing_utils_fast.TorchvisionBackend").found
    module = tree.lookup("transformers.models.llava.image_processing_llava_fast")
    assert (module.found, module.path) == (
        True,
        "transformers/models/llava/image_processing_llava.py",
    )
    assert tree.lookup(
        "transformers.models.llava.image_processing_llava_fast.LlavaImageProcessor"
    ).found
    served = tree.lookup("transformers.LlavaImageProcessorFast")
    assert (served.found, served.qualname) == (True, "LlavaImageProcessor")
    renamed = "transformers.models.llava.image_processing_llava_fast.LlavaImageProcessorFast"
    through = tree.lookup(renamed)
    assert (through.found, through.qualname) == (True, "LlavaImageProcessor")
    assert "by the legacy module" in through.why
    # Only the alias serves the old name: the module itself does not.
    real = "transformers.models.llava.image_processing_llava.LlavaImageProcessorFast"
    assert tree.lookup(real).found is False


def test_5_21_the_alias_table_joins_the_structure_and_the_finder_serves_fast_modules():
    tree = transformers_5(TAIL_5_21)
    lazy = lazy_module(tree._files.load("transformers/__init__.py"))
    assert lazy.unevaluated == ()  # the setdefault loop is understood, not a guess
    assert lazy.aliases == {
        "tokenization_utils_fast": "tokenization_utils_tokenizers",
        "image_processing_utils_fast": "image_processing_backends",
    }
    assert tree.lookup("transformers.tokenization_utils_fast.PreTrainedTokenizerFast").found
    assert tree.lookup("transformers.models.llava.image_processing_llava_fast").found is True
    assert tree.lookup("transformers.models.llava.image_processing_llava_slow").found is False


def test_the_structures_read_per_generation():
    gens = {
        "4.46": transformers_4_46(),
        "4.57": transformers_4_57(),
        "5.0": transformers_5(TAIL_5_0),
        "5.4": transformers_5(TAIL_5_4),
    }
    read = {v: lazy_module(t._files.load("transformers/__init__.py")) for v, t in gens.items()}
    assert read["4.46"].names["LlamaForCausalLM"] == "models.llama"
    assert read["4.46"].folders == ()
    assert read["4.46"].objects == {"__version__"}
    assert read["4.57"].folders == ("models",)
    assert read["4.57"].names == {
        "PretrainedConfig": "configuration_utils",
        "logging": "utils",
        "Trainer": "trainer",
    }
    assert read["5.0"].aliases == {"tokenization_utils_fast": "tokenization_utils_tokenizers"}
    assert not read["5.0"].fast_image_modules
    assert read["5.4"].fast_image_modules
    assert all(not r.unevaluated for r in read.values())


def test_suffix_fallbacks_are_read_from_the_release_own_lazy_module():
    assert suffix_fallbacks(LAZY_4) == ()
    assert suffix_fallbacks(LAZY_5) == (
        ("ImageProcessorFast", "ImageProcessor"),
        ("TokenizerFast", "Tokenizer"),
    )


def test_trl_lazy_module_with_its_own_factory_and_extend_under_try_else():
    tree = package(
        "trl",
        {
            "trl/__init__.py": """
                from typing import TYPE_CHECKING

                from ._lazy_module import _LazyModule

                __version__ = "1.16.0"

                _import_structure = {
                    "trainer": ["SFTConfig", "SFTTrainer"],
                }

                try:
                    if not is_diffusers_available():
                        raise OptionalDependencyNotAvailable()
                except OptionalDependencyNotAvailable:
                    pass
                else:
                    _import_structure["trainer"].extend(["DDPOConfig"])

                if TYPE_CHECKING:
                    from .trainer import SFTTrainer
                else:
                    import sys

                    sys.modules[__name__] = _LazyModule(
                        __name__,
                        globals()["__file__"],
                        _import_structure,
                        module_spec=__spec__,
                        extra_objects={"__version__": __version__},
                    )
            """,
            "trl/_lazy_module.py": LAZY_4,
            "trl/trainer/__init__.py": """
                from typing import TYPE_CHECKING

                from .._lazy_module import _LazyModule

                _import_structure = {
                    "sft_trainer": ["SFTTrainer"],
                    "sft_config": ["SFTConfig"],
                    "ddpo_config": ["DDPOConfig"],
                }

                if not TYPE_CHECKING:
                    import sys

                    sys.modules[__name__] = _LazyModule(
                        __name__, globals()["__file__"], _import_structure, module_spec=__spec__
                    )
            """,
            "trl/trainer/sft_trainer.py": """
                class SFTTrainer:
                    def compute_loss(self):
                        pass
            """,
            "trl/trainer/sft_config.py": "class SFTConfig:\n    pass\n",
            "trl/trainer/ddpo_config.py": "class DDPOConfig:\n    pass\n",
        },
    )
    assert outcome(tree, "trl.SFTTrainer.compute_loss") == (True, "trl/trainer/sft_trainer.py")
    assert outcome(tree, "trl.DDPOConfig") == (True, "trl/trainer/ddpo_config.py")
    assert tree.lookup("trl.__version__").found is True
    assert tree.lookup("trl.SFTTrainr").found is False
    assert "closest: SFTTrainer" in tree.lookup("trl.SFTTrainr").why


def test_a_structure_step_not_evaluated_makes_a_miss_unknown_not_missing():
    tree = package(
        "pkg",
        {
            "pkg/__init__.py": """
                import sys

                _import_structure = {"a": ["A"]}
                _import_structure["b"] = discover_names()
                sys.modules[__name__] = _LazyModule(__name__, __file__, _import_structure)
            """,
            "pkg/a.py": "class A:\n    pass\n",
        },
    )
    assert tree.lookup("pkg.A").found is True
    maybe = tree.lookup("pkg.B")
    assert maybe.found is None
    assert "_import_structure['b'] = discover_names()" in maybe.why


def test_lazy_module_is_none_for_a_regular_module():
    assert lazy_module(parse_module("import sys\nsys.modules['x'] = 1\n", path="m.py")) is None


def listed_4_57(extra: dict[str, str], texts_read: list[str] | None = None):
    return transformers_4_57(listed=True, extra=extra, texts_read=texts_read)


def test_a_listed_folder_is_read_off_its_files_text_once_per_tree_not_parsed():
    texts_read: list[str] = []
    tree = listed_4_57({}, texts_read)
    for name in ("LlamaAttention", "NoSuchModel", "AnotherMiss"):
        miss = tree.lookup(f"transformers.{name}")
        assert miss.found is False
        assert "lazy import structure has no" in miss.why
    # Every file under the folders define_import_structure reads was read, as text, once
    # for the three misses; none of the model files was parsed to read its __all__.
    assert "transformers/models/xlstm/configuration_xlstm.py" in texts_read
    assert "transformers/models/llama/modeling_llama.py" in texts_read
    assert len(texts_read) == len(set(texts_read))
    assert not any(path.startswith("transformers/models/") for path in tree.paths_read - {
        "transformers/models/__init__.py", "transformers/models/llama/__init__.py",
        "transformers/models/xlstm/__init__.py",
    })  # fmt: skip
    # A hit is then looked up in the module that lists it, which is parsed for it.
    assert outcome(tree, "transformers.xLSTMConfig") == (
        True,
        "transformers/models/xlstm/configuration_xlstm.py",
    )
    assert "transformers/models/xlstm/configuration_xlstm.py" in tree.paths_read


def test_a_listed_file_whose_text_does_not_decide_its_all_is_read_from_its_code_index():
    steps = {
        "transformers/models/xlstm/modeling_xlstm.py": """
            class xLSTMModel:
                pass


            class xLSTMBlock:
                pass


            __all__ = ["xLSTMModel"]
            __all__ += ["xLSTMBlock"]
        """
    }
    tree = listed_4_57(steps)
    # Literal steps: the code index evaluates them, so the hit and the miss are exact.
    assert outcome(tree, "transformers.xLSTMBlock") == (
        True,
        "transformers/models/xlstm/modeling_xlstm.py",
    )
    assert tree.lookup("transformers.NoSuchModel").found is False
    # A step not evaluated: that file may serve any name, so a miss is unknown.
    built = {
        "transformers/models/xlstm/modeling_xlstm.py": """
            from . import helpers

            class xLSTMModel:
                pass


            __all__ = ["xLSTMModel"] + helpers.__all__
        """
    }
    tree = listed_4_57(built)
    miss = tree.lookup("transformers.NoSuchModel")
    assert miss.found is None
    assert outcome(tree, "transformers.xLSTMConfig")[0] is True


def test_a_folder_without_an_init_is_no_package_of_the_walk():
    stray = {"transformers/models/stray/modeling_stray.py": "__all__ = ['StrayModel']\n"}
    tree = listed_4_57(stray)
    assert tree.lookup("transformers.StrayModel").found is False


REQUIRES = """
    from ...utils.import_utils import requires


    @requires(backends=("torch",))
    class xLSTMServed:
        pass


    @requires(
        backends=(
            "torch",
        )
    )
    # Copied from somewhere
    def xlstm_served_too():
        pass


    def xlstm_helper():
        pass


    class xLSTMModel:
        pass

"""


@pytest.mark.parametrize(
    "all_", ['__all__ = ["xLSTMModel"]', '__all__ = ["xLSTMModel"]\n__all__ += []']
)
def test_requires_definitions_are_served_beside_the_all(all_):
    # define_import_structure serves a @requires definition its __all__ does not list
    # (transformers' model_addition_debugger_context): off the text where it decides the
    # __all__ (one step), else off the code index (two steps)
    text = textwrap.dedent(REQUIRES) + all_ + "\n"
    tree = listed_4_57({"transformers/models/xlstm/modeling_xlstm.py": text})
    for name in ("xLSTMServed", "xlstm_served_too", "xLSTMModel"):
        assert outcome(tree, f"transformers.{name}") == (
            True,
            "transformers/models/xlstm/modeling_xlstm.py",
        )
    # An undecorated definition is not served, though the module binds it
    miss = tree.lookup("transformers.xlstm_helper")
    assert miss.found is False
    assert "lazy import structure has no 'xlstm_helper'" in miss.why
