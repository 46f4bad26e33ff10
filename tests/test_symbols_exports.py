"""Names in a module: definitions, imports, re-export chains, star imports, cycles."""

from __future__ import annotations

from symbols_trees import package

CHAIN = {
    "pkg/__init__.py": """
        from .api import Trainer
        from .api import helper as public_helper
        import pkg.utils.logging as logging
        import os.path
    """,
    "pkg/api.py": "from pkg.core.trainer import Trainer\nfrom .core import helper\n",
    "pkg/core/__init__.py": "from .trainer import *\nfrom .helpers import helper\n",
    "pkg/core/trainer.py": """
        import torch.nn as nn

        __all__ = ["Trainer"]
        __all__ += ["TrainerState"]


        class Trainer:
            def compute_loss(self, model, inputs):
                return 0


        class TrainerState:
            pass


        class NotExported:
            pass


        def _private():
            pass
    """,
    "pkg/core/helpers.py": "def helper():\n    pass\n",
    "pkg/utils/__init__.py": "",
    "pkg/utils/logging.py": "def get_logger(name):\n    pass\n",
}


def test_module_file_is_the_module_or_the_package_init():
    tree = package("pkg", CHAIN)
    assert tree.module_file("pkg.core") == "pkg/core/__init__.py"
    assert tree.module_file("pkg.core.trainer") == "pkg/core/trainer.py"
    assert tree.module_file("pkg.nothing") is None
    assert tree.module_file("other.core") is None


def test_a_re_export_chain_is_followed_to_the_definition():
    tree = package("pkg", CHAIN)
    trainer = tree.lookup("pkg.Trainer")
    assert (trainer.found, trainer.kind, trainer.path, trainer.qualname) == (
        True,
        "class",
        "pkg/core/trainer.py",
        "Trainer",
    )
    assert tree.lookup("pkg.Trainer.compute_loss").function.name == "compute_loss"
    helper = tree.lookup("pkg.public_helper")
    assert (helper.found, helper.kind, helper.path) == (True, "function", "pkg/core/helpers.py")
    assert tree.lookup("pkg.helper").found is False  # bound only under its alias


def test_import_a_b_as_c_binds_the_submodule_and_import_a_b_binds_a():
    tree = package("pkg", CHAIN)
    logging = tree.lookup("pkg.logging.get_logger")
    assert (logging.found, logging.path) == (True, "pkg/utils/logging.py")
    os_ = tree.lookup("pkg.os")
    assert (os_.found, os_.kind, os_.why) == (True, "external", "os")


def test_a_star_import_honours_a_literal_all_built_in_steps():
    tree = package("pkg", CHAIN)
    assert tree.lookup("pkg.core.Trainer").found is True
    assert tree.lookup("pkg.core.TrainerState").found is True  # from __all__ += [...]
    excluded = tree.lookup("pkg.core.NotExported")
    assert excluded.found is False
    assert "pkg.core does not bind 'NotExported'" in excluded.why


def test_a_star_import_without_all_takes_public_names_only():
    tree = package(
        "pkg",
        {
            "pkg/__init__.py": "from .impl import *\n",
            "pkg/impl.py": "def public():\n    pass\n\n\ndef _private():\n    pass\n",
        },
    )
    assert tree.lookup("pkg.public").found is True
    assert tree.lookup("pkg._private").found is False


def test_an_external_binding_is_found_and_what_lies_beyond_it_is_unknown():
    tree = package("pkg", CHAIN)
    nn = tree.lookup("pkg.core.trainer.nn")
    assert (nn.found, nn.kind, nn.why) == (True, "external", "torch.nn")
    beyond = tree.lookup("pkg.core.trainer.nn.Module")
    assert beyond.found is None
    assert beyond.why == "pkg.core.trainer.nn is torch.nn, outside pkg"


def test_a_miss_names_the_closest_names():
    tree = package("pkg", CHAIN)
    miss = tree.lookup("pkg.core.trainer.Trainr")
    assert miss.found is False
    assert "closest: Trainer" in miss.why
    assert miss.path == "pkg/core/trainer.py"
    gone = tree.lookup("pkg.gone.Thing")
    assert gone.found is False
    assert gone.kind == "name"


def test_an_import_cycle_is_unknown_not_a_recursion():
    tree = package(
        "pkg",
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "from .b import x\n",
            "pkg/b.py": "from .a import x\n",
        },
    )
    answer = tree.lookup("pkg.a.x")
    assert answer.found is None
    assert "cycle" in answer.why


def test_from_dot_import_a_submodule_in_its_own_init_is_the_submodule():
    tree = package(
        "pkg",
        {
            "pkg/__init__.py": "from . import models\n",
            "pkg/models/__init__.py": "from . import llama\n",
            "pkg/models/llama/__init__.py": "",
            "pkg/models/llama/modeling_llama.py": "class LlamaModel:\n    pass\n",
        },
    )
    answer = tree.lookup("pkg.models.llama.modeling_llama.LlamaModel")
    assert (answer.found, answer.kind) == (True, "class")


def test_type_checking_only_bindings_are_unknown_and_try_imports_beat_their_fallback():
    tree = package(
        "pkg",
        {
            "pkg/__init__.py": "",
            "pkg/impl.py": "class Real:\n    pass\n",
            "pkg/mod.py": """
                from typing import TYPE_CHECKING

                if TYPE_CHECKING:
                    from .impl import Real as OnlyTyped

                try:
                    from .impl import Real
                except ImportError:
                    Real = None
            """,
        },
    )
    typed = tree.lookup("pkg.mod.OnlyTyped")
    assert typed.found is None
    assert "TYPE_CHECKING" in typed.why
    real = tree.lookup("pkg.mod.Real")
    assert (real.found, real.kind, real.path) == (True, "class", "pkg/impl.py")


PEFT_LORA = {
    "peft/__init__.py": "",
    "peft/tuners/__init__.py": "",
    "peft/tuners/lora/__init__.py": """
        from peft.import_utils import is_bnb_4bit_available, is_bnb_available

        from .model import LoraModel


        def __getattr__(name):
            if (name == "Linear8bitLt") and is_bnb_available():
                from .bnb import Linear8bitLt

                return Linear8bitLt

            if (name == "Linear4bit") and is_bnb_4bit_available():
                from .bnb import Linear4bit

                return Linear4bit

            if name in ("EetqLoraLinear", "HqqLoraLinear"):
                return None

            raise AttributeError(f"module {__name__} has no attribute {name}")
    """,
    "peft/tuners/lora/model.py": "class LoraModel:\n    pass\n",
    "peft/tuners/lora/bnb.py": "class Linear8bitLt:\n    pass\n\n\nclass Linear4bit:\n    pass\n",
}


def test_names_a_module_getattr_compares_to_are_served_and_followed_to_their_import():
    tree = package("peft", PEFT_LORA)
    linear = tree.lookup("peft.tuners.lora.Linear8bitLt")
    assert (linear.found, linear.kind, linear.path) == (True, "class", "peft/tuners/lora/bnb.py")
    assert linear.why == "served by peft.tuners.lora.__getattr__"
    eetq = tree.lookup("peft.tuners.lora.HqqLoraLinear")
    assert (eetq.found, eetq.kind) == (True, "served")


def test_a_getattr_that_serves_only_its_literals_makes_other_names_missing():
    tree = package("peft", PEFT_LORA)
    gone = tree.lookup("peft.tuners.lora.Linear8bit")
    assert gone.found is False
    assert "serves only EetqLoraLinear, HqqLoraLinear, Linear4bit, Linear8bitLt" in gone.why


def test_a_module_getattr_makes_a_miss_unknown():
    tree = package(
        "pkg",
        {"pkg/__init__.py": "def __getattr__(name):\n    return getattr(_backend(), name)\n"},
    )
    answer = tree.lookup("pkg.Linear8bitLt")
    assert answer.found is None
    assert "__getattr__" in answer.why


def test_a_deprecation_getattr_serves_the_names_of_its_tables_and_no_other():
    # transformers 5.23+: processing_llama4.py keeps Llama4ProcessorKwargs this way
    tree = package(
        "pkg",
        {
            "pkg/__init__.py": "",
            "pkg/proc.py": """
                from .utils import ProcessingKwargs, deprecate_attr, make
                __getattr__ = deprecate_attr(
                    __name__, rename={"OldKwargs": (ProcessingKwargs, "5.29.0")}, remove={}
                )
            """,
            "pkg/other.py": "__getattr__ = make(__name__)\n",
        },
    )
    assert tree.lookup("pkg.proc.OldKwargs").found is True
    assert tree.lookup("pkg.proc.GoneKwargs").found is False
    assert tree.lookup("pkg.other.AnyName").found is None  # a __getattr__ not read


PIPELINES = {
    "pkg/__init__.py": "",
    "pkg/pipelines/__init__.py": """
        import importlib
        from typing import TYPE_CHECKING

        _CLASS_TO_MODULE = {"TextPipeline": "pkg.pipelines.text"}

        if TYPE_CHECKING:
            from .text import TextPipeline
            from .gone import GonePipeline

        def __getattr__(name):
            if name in _CLASS_TO_MODULE:
                module = importlib.import_module(_CLASS_TO_MODULE[name])
                return getattr(module, name)
            raise AttributeError(name)
    """,
    "pkg/pipelines/text.py": "class TextPipeline:\n    pass\n",
    "pkg/pipelines/gone.py": "class GonePipeline:\n    pass\n",
}


def test_a_getattr_serving_a_table_of_modules_serves_its_keys_from_them():
    # transformers 5.23+ pipelines/__init__.py: the classes are imported for type checkers
    # and loaded at run time by __getattr__ from _PIPELINE_CLASS_TO_MODULE
    tree = package("pkg", PIPELINES)
    text = tree.lookup("pkg.pipelines.TextPipeline")
    assert (text.found, text.path) == (True, "pkg/pipelines/text.py")
    # imported for type checkers only, and not in the table: nothing serves it at run time
    assert tree.lookup("pkg.pipelines.GonePipeline").found is False
    assert tree.lookup("pkg.pipelines.Other").found is False


def test_a_module_writing_its_globals_makes_a_miss_unknown():
    tree = package(
        "pkg",
        {"pkg/__init__.py": "for _n in NAMES:\n    globals()[_n] = make(_n)\n"},
    )
    answer = tree.lookup("pkg.Made")
    assert answer.found is None
    assert "globals()[_n] = make(_n)" in answer.why


def test_paths_read_lists_every_path_asked_for():
    tree = package("pkg", CHAIN)
    tree.lookup("pkg.Trainer")
    assert {"pkg/__init__.py", "pkg/api.py", "pkg/core/trainer.py"} <= tree.paths_read
    assert "pkg/utils/logging.py" not in tree.paths_read  # never needed


def test_what_the_import_system_sets_on_every_module_is_there_but_all_is_not():
    tree = package("pkg", CHAIN)
    for dotted in ("pkg.__package__", "pkg.core.trainer.__file__", "pkg.utils.__spec__"):
        assert tree.lookup(dotted).found is True, dotted
    assert tree.lookup("pkg.core.__path__").found is True  # a package
    assert tree.lookup("pkg.core.trainer.__path__").found is False  # a module is none
    # __all__ is the module's own: pkg/api.py never defines one.
    assert tree.lookup("pkg.api.__all__").found is False


ALIASES = {
    "pkg/__init__.py": (
        "from .config import PretrainedConfig, Guarded, Called, BartConfig, Tried, Rebound\n"
    ),
    "pkg/base.py": """
        class RobertaConfig:
            def to_dict(self):
                return {}
    """,
    "pkg/config.py": """
        import sys

        from .base import RobertaConfig as _RobertaConfig

        try:
            from .base import RobertaConfig as _Tried
        except ImportError:
            _Tried = None
        from .base import RobertaConfig as _Rebound
        _Rebound = dict

        BartConfig = _RobertaConfig
        Tried = _Tried
        Rebound = _Rebound


        class PreTrainedConfig:
            def to_dict(self):
                return {}


        PretrainedConfig = PreTrainedConfig
        if sys.version_info >= (3, 12):
            Guarded = PreTrainedConfig
        Called = type("Called", (PreTrainedConfig,), {})
    """,
}


def test_a_plain_alias_of_a_class_is_that_class():
    tree = package("pkg", ALIASES)
    alias = tree.lookup("pkg.PretrainedConfig")
    assert (alias.found, alias.kind, alias.qualname) == (True, "class", "PreTrainedConfig")
    assert tree.lookup("pkg.PretrainedConfig.to_dict").found is True
    assert tree.lookup("pkg.PretrainedConfig.from_dict").found is False
    # of an imported class: that class (transformers 5's BartTokenizer = _RobertaTokenizer)
    assert tree.lookup("pkg.BartConfig.to_dict").found is True
    assert tree.lookup("pkg.BartConfig.from_dict").found is False
    # under a test, any other value, or a name imported under a try or bound again: an
    # assignment, whose members are not known
    for name in ("Guarded", "Called", "Tried", "Rebound"):
        assert tree.lookup(f"pkg.{name}.to_dict").found is None, name


def test_a_name_a_function_declares_global_is_bound_at_run_time():
    # transformers 4.57+ integrations/mxfp4.py: replace_with_mxfp4_linear sets the kernel
    # hub every function of the module reads; a project may set it first
    tree = package(
        "pkg",
        {
            "pkg/__init__.py": "",
            "pkg/mxfp4.py": """
                def replace(model):
                    global triton_kernels_hub
                    triton_kernels_hub = load()

                def forward(x):
                    return triton_kernels_hub.matmul(x)
            """,
        },
    )
    hub = tree.lookup("pkg.mxfp4.triton_kernels_hub")
    assert (hub.found, hub.kind, hub.path) == (True, "run_time_global", "pkg/mxfp4.py")
    assert tree.lookup("pkg.mxfp4.forward_hub").found is False


def test_an_import_finds_the_submodule_an_attribute_of_the_same_name_hides():
    # transformers/__init__ serves convert_slow_tokenizer, the function, as an attribute;
    # `from transformers.convert_slow_tokenizer import x` imports the module of that name
    tree = package(
        "pkg",
        {
            "pkg/__init__.py": "from .conv import conv\n",
            "pkg/conv.py": "def conv():\n    pass\n\ndef helper():\n    pass\n",
        },
    )
    assert tree.lookup("pkg.conv.helper", imported=True).found is True
    assert tree.lookup("pkg.conv.gone", imported=True).found is False
    # as attributes, the function's; which the site reads depends on how it bound the name
    hidden = tree.lookup("pkg.conv.helper")
    assert hidden.found is None
    assert "which an attribute of its package hides" in hidden.why
    assert tree.lookup("pkg.conv.gone").found is False  # in neither: missing
    assert tree.lookup("pkg.conv", imported=True).kind == "function"  # the last part: getattr
