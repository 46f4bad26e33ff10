"""Class members through the static MRO across files (canary.symbols.classes)."""

from __future__ import annotations

from symbols_trees import package

from canary.symbols.classes import NN_MODULE_MEMBERS

# A model shaped like transformers': the base model in one file, a mixin in another, the
# model in a third, each importing the others relatively or absolutely.
THREE_FILES = {
    "pkg/__init__.py": "",
    "pkg/modeling_utils.py": """
        import torch
        from torch import nn


        class ModuleUtilsMixin:
            def num_parameters(self):
                return 0


        class PreTrainedModel(nn.Module, ModuleUtilsMixin):
            config_class = None
            supports_gradient_checkpointing = False

            def __init__(self, config):
                super().__init__()
                self.config = config

            def gradient_checkpointing_enable(self):
                self.is_gradient_checkpointing = True

            @property
            def device(self):
                return None
    """,
    "pkg/generation/__init__.py": "from .utils import GenerationMixin\n",
    "pkg/generation/utils.py": """
        class GenerationMixin:
            def generate(self, inputs):
                return self.forward(inputs)

            def num_parameters(self):
                return 1
    """,
    "pkg/models/__init__.py": "",
    "pkg/models/llama/__init__.py": "",
    "pkg/models/llama/modeling_llama.py": """
        from dataclasses import dataclass

        from ...generation import GenerationMixin
        from pkg.modeling_utils import PreTrainedModel as Base


        class LlamaPreTrainedModel(Base):
            _no_split_modules = ["LlamaDecoderLayer"]


        class LlamaForCausalLM(LlamaPreTrainedModel, GenerationMixin):
            class Output:
                pass

            def forward(self, input_ids, labels=None):
                self.last_loss = None
                return input_ids


        @dataclass
        class LlamaOutput:
            loss: float = None
            logits: object


        class Annotated:
            hidden: int
    """,
}
LLAMA = "pkg/models/llama/modeling_llama.py"


def test_the_mro_is_c3_across_three_files_with_the_mixin_and_the_base_outside_named():
    tree = package("pkg", THREE_FILES)
    mro = tree.mro(LLAMA, "LlamaForCausalLM")
    names = [e if isinstance(e, str) else f"{e[0]}:{e[1].qualname}" for e in mro]
    assert names == [
        f"{LLAMA}:LlamaForCausalLM",
        f"{LLAMA}:LlamaPreTrainedModel",
        "pkg/modeling_utils.py:PreTrainedModel",
        "torch.nn.Module",
        # C3: the mixin PreTrainedModel names comes before the one the subclass adds,
        # because nothing later in the merge needs it after GenerationMixin.
        "pkg/modeling_utils.py:ModuleUtilsMixin",
        "pkg/generation/utils.py:GenerationMixin",
    ]


def test_a_member_is_found_where_the_mro_first_binds_it_with_its_kind():
    tree = package("pkg", THREE_FILES)
    found = {
        name: tree.member(LLAMA, "LlamaForCausalLM", name)
        for name in (
            "forward",
            "generate",
            "gradient_checkpointing_enable",
            "device",
            "config_class",
            "_no_split_modules",
            "Output",
            "config",
            "last_loss",
            "is_gradient_checkpointing",
            "num_parameters",
        )
    }
    assert {name: (f.found, f.kind) for name, f in found.items()} == {
        "forward": (True, "method"),
        "generate": (True, "method"),
        "gradient_checkpointing_enable": (True, "method"),
        "device": (True, "property"),
        "config_class": (True, "class_attribute"),
        "_no_split_modules": (True, "class_attribute"),
        "Output": (True, "nested_class"),
        "config": (True, "instance_attribute"),
        "last_loss": (True, "instance_attribute"),
        "is_gradient_checkpointing": (True, "instance_attribute"),
        "num_parameters": (True, "method"),
    }
    # The mixin that comes first in the MRO wins, and the definition comes with the answer.
    assert found["num_parameters"].path == "pkg/modeling_utils.py"
    assert "return 0" in found["num_parameters"].function.source
    assert found["generate"].path == "pkg/generation/utils.py"
    assert found["generate"].qualname == "GenerationMixin.generate"


def test_torch_nn_module_members_count_as_found_and_other_names_are_missing():
    tree = package("pkg", THREE_FILES)
    hook = tree.member(LLAMA, "LlamaForCausalLM", "register_forward_hook")
    assert (hook.found, hook.kind, hook.why) == (True, "inherited", "torch.nn.Module")
    assert "named_modules" in NN_MODULE_MEMBERS
    # beyond the well-known ones, nn.Module's whole table (torch 2.13.0)
    named = tree.member(LLAMA, "LlamaForCausalLM", "_named_members")
    assert (named.found, named.kind) == (True, "inherited")
    # nn.Module's members are a fixed table: a name none of the classes binds is gone
    other = tree.member(LLAMA, "LlamaForCausalLM", "not_there_at_all")
    assert other.found is False
    assert "torch.nn.Module provide none (nn.Module: torch 2.13.0)" in other.why


ENUMS = {
    "pkg/__init__.py": "",
    "pkg/utils.py": """
        from enum import Enum

        import numpy


        class ExplicitEnum(str, Enum):
            pass


        class SaveStrategy(ExplicitEnum):
            NO = "no"
            STEPS = "steps"


        class Array(numpy.ndarray):
            pass
    """,
}


def test_an_enum_member_neither_str_nor_enum_provides_is_missing():
    tree = package("pkg", ENUMS)
    assert tree.member("pkg/utils.py", "SaveStrategy", "STEPS").found is True
    assert tree.member("pkg/utils.py", "SaveStrategy", "upper").found is True  # str's
    assert tree.member("pkg/utils.py", "SaveStrategy", "value").found is True  # Enum's
    gone = tree.member("pkg/utils.py", "SaveStrategy", "EPOCH")
    assert gone.found is False
    # a base whose members are not a known table: it may provide anything
    assert tree.member("pkg/utils.py", "Array", "EPOCH").found is None


def test_a_member_no_class_binds_is_missing_when_every_base_is_in_the_package():
    tree = package("pkg", THREE_FILES)
    miss = tree.member("pkg/generation/utils.py", "GenerationMixin", "generat")
    assert miss.found is False
    assert "generate" in miss.why  # the closest name
    assert tree.member("pkg/generation/utils.py", "GenerationMixin", "__init__").found is True


def test_dataclass_fields_are_found_and_a_bare_annotation_elsewhere_is_unknown():
    tree = package("pkg", THREE_FILES)
    logits = tree.member(LLAMA, "LlamaOutput", "logits")
    assert (logits.found, logits.kind) == (True, "field")
    hidden = tree.member(LLAMA, "Annotated", "hidden")
    assert hidden.found is None
    assert "annotates" in hidden.why


def test_names_imported_in_a_class_body_are_members():
    # transformers' Trainer imports log_metrics and friends inside its class body, and
    # TrainingArguments imports a version flag there under ``if is_torch_available():``.
    tree = package(
        "pkg",
        {
            "pkg/__init__.py": "",
            "pkg/trainer_pt_utils.py": "def log_metrics(self, split, metrics):\n    pass\n",
            "pkg/trainer.py": """
                class Trainer:
                    from .trainer_pt_utils import log_metrics

                    if is_torch_available():
                        from torch import float16 as default_dtype
            """,
        },
    )
    metrics = tree.member("pkg/trainer.py", "Trainer", "log_metrics")
    assert (metrics.found, metrics.kind, metrics.path) == (
        True,
        "method",
        "pkg/trainer_pt_utils.py",
    )
    assert metrics.function.name == "log_metrics"
    dtype = tree.member("pkg/trainer.py", "Trainer", "default_dtype")
    assert (dtype.found, dtype.kind) == (True, "class_attribute")


def test_dunder_names_no_class_binds_are_unknown_not_missing():
    tree = package("pkg", THREE_FILES)
    assert tree.member(LLAMA, "LlamaOutput", "__match_args__").found is None
    assert tree.member(LLAMA, "LlamaOutput", "__init__").found is True  # object's
    # what @dataclass sets on the class, and only on a dataclass
    assert tree.member(LLAMA, "LlamaOutput", "__dataclass_fields__").found is True
    assert tree.member(LLAMA, "LlamaForCausalLM", "__dataclass_fields__").found is None


def test_a_getattr_in_the_mro_makes_a_miss_unknown():
    tree = package(
        "pkg",
        {
            "pkg/__init__.py": "",
            "pkg/peft_model.py": """
                class PeftModel:
                    def __getattr__(self, name):
                        return getattr(self.base_model, name)


                class PeftModelForCausalLM(PeftModel):
                    pass
            """,
        },
    )
    answer = tree.member("pkg/peft_model.py", "PeftModelForCausalLM", "generate")
    assert answer.found is None
    assert "__getattr__" in answer.why


def test_lookup_walks_dotted_paths_through_modules_and_classes():
    tree = package("pkg", THREE_FILES)
    answer = tree.lookup("pkg.models.llama.modeling_llama.LlamaForCausalLM.generate")
    assert (answer.found, answer.kind, answer.path) == (True, "method", "pkg/generation/utils.py")
    nested = tree.lookup("pkg.models.llama.modeling_llama.LlamaForCausalLM.Output")
    assert (nested.found, nested.kind) == (True, "nested_class")
    deeper = tree.lookup("pkg.models.llama.modeling_llama.LlamaForCausalLM.forward.__code__")
    assert (deeper.found, deeper.kind) == (True, "inherited")  # every function has one


def test_a_missing_base_makes_the_mro_empty_and_members_missing_with_the_reason():
    tree = package(
        "pkg",
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "from .b import Gone\n\n\nclass A(Gone):\n    pass\n",
            "pkg/b.py": "class Here:\n    pass\n",
        },
    )
    assert tree.mro("pkg/a.py", "A") == ()
    answer = tree.member("pkg/a.py", "A", "x")
    assert answer.found is False
    assert "Gone" in answer.why


def test_what_the_class_itself_binds_is_found_without_reading_its_bases():
    """The class comes first in its own MRO: its own method is found even where a base
    is missing or cannot be read, and the bases' files (transformers' modeling_utils.py
    and generation/utils.py for every model) are not even read."""
    files = {
        "pkg/__init__.py": "",
        "pkg/a.py": """
            from .b import Gone
            from .c import Base


            class A(Gone):
                def forward(self):
                    pass


            class B(Base):
                scale = 2
        """,
        "pkg/b.py": "class Here:\n    pass\n",
        "pkg/c.py": "class Base:\n    def forward(self):\n        pass\n",
    }
    tree = package("pkg", files)
    own = tree.member("pkg/a.py", "A", "forward")
    assert (own.found, own.kind, own.qualname) == (True, "method", "A.forward")
    assert tree.member("pkg/a.py", "B", "scale").found is True
    assert tree.paths_read == {"pkg/a.py"}
    # A name it does not bind itself still needs the bases: here one is missing.
    assert tree.member("pkg/a.py", "A", "other").found is False
    assert tree.member("pkg/a.py", "B", "forward").path == "pkg/c.py"


def test_classes_inheriting_from_each_other_across_files_are_unknown_not_a_crash():
    tree = package(
        "pkg",
        {
            "pkg/__init__.py": "",
            "pkg/a.py": "from .b import B\n\n\nclass A(B):\n    pass\n",
            "pkg/b.py": "from .a import A\n\n\nclass B(A):\n    pass\n",
        },
    )
    assert tree.member("pkg/a.py", "A", "x").found is None


def test_a_base_outside_the_package_hides_what_a_later_mixin_binds():
    """Python stops at the first class of the MRO that binds a name: a mixin listed after
    transformers' Trainer never serves compute_loss (Trainer's does), so the static lookup
    must not report the mixin's; past torch.nn.Module it goes on for a name nn.Module does
    not have (transformers' models put GenerationMixin after it)."""
    tree = package(
        "trl",
        {
            "trl/__init__.py": "",
            "trl/mixins.py": """
                class LossMixin:
                    def compute_loss(self, model, inputs):
                        return 0
            """,
            "trl/sft.py": """
                from transformers import Trainer
                from .mixins import LossMixin


                class AfterTrainer(Trainer, LossMixin):
                    pass


                class BeforeTrainer(LossMixin, Trainer):
                    pass
            """,
        },
    )
    hidden = tree.member("trl/sft.py", "AfterTrainer", "compute_loss")
    assert hidden.found is None
    assert "transformers.Trainer" in hidden.why
    served = tree.member("trl/sft.py", "BeforeTrainer", "compute_loss")
    assert (served.found, served.qualname) == (True, "LossMixin.compute_loss")
    generate = package("pkg", THREE_FILES).member(LLAMA, "LlamaForCausalLM", "generate")
    assert generate.found is True
