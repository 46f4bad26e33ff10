"""Extraction of a project's upstream surface, on small project trees written here."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from canary.errors import ParseError
from canary.surface.extract import extract
from canary.surface.model import Kind, Match, Reference

UPSTREAM = ("transformers", "trl", "peft")


def surface(tmp_path: Path, files: dict[str, str], **options) -> tuple[Reference, ...]:
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return extract(tmp_path, sorted(files), upstream=UPSTREAM, **options)


def targets(references, kind: Kind) -> set[str]:
    return {r.target for r in references if r.kind is kind}


def one(references, kind: Kind, target: str, anchor: str | None = None) -> Reference:
    found = [
        r
        for r in references
        if r.kind is kind and r.target == target and (anchor is None or r.anchor == anchor)
    ]
    assert len(found) == 1, f"{kind} {target} {anchor!r}: {found}"
    return found[0]


def anchors(references, target: str) -> dict[str, Match | None]:
    return {r.anchor: r.match for r in references if r.kind is Kind.ANCHOR and r.target == target}


# --- imports ---------------------------------------------------------------------------


def test_an_upstream_package_checked_as_a_project_references_only_the_others(tmp_path):
    # trl checked as a downstream of transformers: its imports of trl are its own code, the
    # release installed with it, never another release of trl
    refs = surface(
        tmp_path,
        {
            "trl/__init__.py": "from trl.trainer import SFTTrainer\n",
            "trl/trainer.py": "from transformers import Trainer\nclass SFTTrainer(Trainer): ...\n",
            "tests/test_trl.py": "from trl import SFTTrainer\nimport peft\n",
        },
    )
    assert {r.target for r in refs} == {"transformers.Trainer", "peft"}


def test_imports_anywhere_with_their_sites(tmp_path):
    refs = surface(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/a.py": """\
                import os
                import transformers.models.llama.modeling_llama as ml
                from trl import SFTTrainer
                from . import b
                import importlib

                def load():
                    from peft.tuners.lora import LoraLayer
                    module = importlib.import_module("transformers.trainer")
                    return __import__("trl.trainer")
                """,
            "pkg/b.py": "from trl import SFTTrainer\n",
        },
    )
    assert targets(refs, Kind.IMPORT) == {
        "transformers.models.llama.modeling_llama",
        "trl.SFTTrainer",
        "peft.tuners.lora.LoraLayer",
        "transformers.trainer",
        "trl.trainer",
    }
    sft = one(refs, Kind.IMPORT, "trl.SFTTrainer")
    assert [(s.path, s.line) for s in sft.sites] == [("pkg/a.py", 3), ("pkg/b.py", 1)]
    assert sft.package == "trl"
    assert one(refs, Kind.IMPORT, "peft.tuners.lora.LoraLayer").sites[0].line == 8


def test_guarded_imports_and_type_checking(tmp_path):
    refs = surface(
        tmp_path,
        {
            "m.py": """\
                from typing import TYPE_CHECKING
                try:
                    from transformers.integrations import deepspeed
                except ImportError:
                    deepspeed = None
                from transformers.utils import is_peft_available
                if is_peft_available():
                    from peft import PeftModel
                else:
                    from peft.old import PeftModel
                if TYPE_CHECKING:
                    from trl import GRPOTrainer
                """
        },
    )
    assert one(refs, Kind.IMPORT, "transformers.integrations.deepspeed").guarded
    assert one(refs, Kind.IMPORT, "peft.PeftModel").guarded
    assert one(refs, Kind.IMPORT, "peft.old.PeftModel").guarded
    assert not one(refs, Kind.IMPORT, "transformers.utils.is_peft_available").guarded
    assert "trl.GRPOTrainer" not in targets(refs, Kind.IMPORT)  # never runs


# --- attribute chains ------------------------------------------------------------------


def test_attribute_chains_through_aliases_stop_at_calls_and_runtime_attributes(tmp_path):
    refs = surface(
        tmp_path,
        {
            "m.py": """\
                import transformers
                from transformers.models.llama import modeling_llama as ml
                models = transformers.models
                def f(cfg):
                    norm = ml.nn.LayerNorm
                    model = transformers.AutoModel.from_pretrained(cfg).config.hidden
                    name = ml.LlamaAttention.forward.__name__
                    other = models.mistral.modeling_mistral.MistralModel
                    cfg.transformers = 1
                    ml.ALL_LAYERNORM_LAYERS.append(norm)
                    ml.logger.warning_once("x")
                    ml.LlamaModel.update(cfg)
                """
        },
    )
    assert targets(refs, Kind.ATTRIBUTE) == {
        "transformers.models",
        # reported whole: where it leaves the package (nn is torch's) only resolution knows
        "transformers.models.llama.modeling_llama.nn.LayerNorm",
        "transformers.AutoModel.from_pretrained",
        "transformers.models.llama.modeling_llama.LlamaAttention.forward",
        "transformers.models.mistral.modeling_mistral.MistralModel",
        # a list's and a logger's methods are not upstream's API; the values are
        "transformers.models.llama.modeling_llama.ALL_LAYERNORM_LAYERS",
        "transformers.models.llama.modeling_llama.logger",
        "transformers.models.llama.modeling_llama.LlamaModel.update",
    }


def test_names_bound_by_project_modules_and_star_imports(tmp_path):
    refs = surface(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/_utils.py": "from transformers import Trainer\nimport trl as _trl\n",
            "pkg/llama.py": "from ._utils import *\n",
            # names nothing upstream: it is read because it imports a project module and
            # names what project modules bind to upstream
            "pkg/user.py": "from pkg.llama import *\n\nTrainer.train(None)\n",
            "pkg/star.py": "from transformers.trainer import *\n\nx = Trainer.evaluate\n",
            "pkg/mod.py": "from pkg import _utils\n\ny = _utils.Trainer.predict\n",
        },
    )
    attrs = targets(refs, Kind.ATTRIBUTE)
    assert "transformers.Trainer.train" in attrs
    assert "transformers.trainer.Trainer.evaluate" in attrs  # the one upstream star import
    assert "transformers.Trainer.predict" in attrs
    assert not any(t.startswith("trl") for t in attrs)  # private names are not star-exported


def test_a_name_only_an_upstream_star_import_binds_is_read_through_it(tmp_path):
    # lsg-converter: `from transformers.models.bert.modeling_bert import *`, then
    # `class LSGBertEmbeddings(BertEmbeddings)`: 4.48's __all__ leaves BertEmbeddings out
    refs = surface(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/bert.py": """\
                from __future__ import annotations
                from transformers.models.bert.modeling_bert import *
                from transformers import BertConfig

                class Embeddings(BertEmbeddings):
                    def forward(self, x: BertSelfOutput) -> BertConfig:
                        return x / math.sqrt(2)

                def helper(config):
                    local = config
                    return local, logger
                """,
        },
    )
    star = "transformers.models.bert.modeling_bert"
    read = {r.target: r.star for r in refs if r.kind is Kind.ATTRIBUTE}
    assert read == {f"{star}.{name}": star for name in ("BertEmbeddings", "math.sqrt", "logger")}
    assert one(refs, Kind.IMPORT, "transformers.BertConfig").star is None  # bound by an import


def test_a_star_import_of_a_project_module_gives_on_what_its_upstream_star_gave_it(tmp_path):
    # `from pkg.base import *` gives base's globals, those its own star import bound too
    refs = surface(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/base.py": "from transformers.models.bert.modeling_bert import *\n",
            "pkg/user.py": "from pkg.base import *\n\nclass E(BertEmbeddings): ...\n",
        },
    )
    star = "transformers.models.bert.modeling_bert"
    read = one(refs, Kind.ATTRIBUTE, f"{star}.BertEmbeddings")
    assert (read.star, [s.path for s in read.sites]) == (star, ["pkg/user.py"])


def test_a_module_read_inside_an_import_cycle_is_walked_with_the_cycle_complete(tmp_path):
    # reading b's names reads a's, which sees b partly initialised (no helper_alias yet);
    # a's functions run later, when b is complete
    refs = surface(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/b.py": "from transformers import X as helper_alias\nfrom pkg.a import use\n",
            "pkg/a.py": """\
                from pkg.b import helper_alias

                def use():
                    return helper_alias.forward
                """,
        },
    )
    assert one(refs, Kind.ATTRIBUTE, "transformers.X.forward").sites[0].path == "pkg/a.py"


# --- patches ---------------------------------------------------------------------------


def test_patch_targets(tmp_path):
    refs = surface(
        tmp_path,
        {
            "m.py": """\
                from aenum import extend_enum
                from enum import EnumType
                from transformers.models.llama import modeling_llama
                from transformers.modeling_utils import ALL_ATTENTION_FUNCTIONS
                import transformers

                def fast_forward(self, x):
                    return x

                modeling_llama.LlamaAttention.forward = fast_forward
                setattr(modeling_llama.LlamaRMSNorm, "forward", fast_forward)
                ALL_ATTENTION_FUNCTIONS["fast"] = fast_forward
                extend_enum(transformers.utils.ExplicitEnum, "FAST", "fast")  # aenum's
                name = "SLOW"  # bicep's, on Python 3.13's enum
                EnumType._add_member_(transformers.utils.ExplicitEnum, name, object())
                transformers.utils.logging._default_log_level += 10
                if hasattr(modeling_llama, "LlamaFlashAttention2"):
                    modeling_llama.LlamaFlashAttention2.forward = fast_forward
                """
        },
    )
    assert targets(refs, Kind.PATCH) == {
        "transformers.models.llama.modeling_llama.LlamaAttention.forward",
        "transformers.models.llama.modeling_llama.LlamaRMSNorm.forward",
        "transformers.modeling_utils.ALL_ATTENTION_FUNCTIONS",
        "transformers.utils.ExplicitEnum.FAST",
        "transformers.utils.ExplicitEnum.SLOW",
        "transformers.utils.logging._default_log_level",
        "transformers.models.llama.modeling_llama.LlamaFlashAttention2.forward",
    }
    flash = "transformers.models.llama.modeling_llama.LlamaFlashAttention2"
    assert one(refs, Kind.PATCH, f"{flash}.forward").guarded
    assert one(refs, Kind.ATTRIBUTE, flash).guarded  # the hasattr itself
    assert not one(refs, Kind.PATCH, "transformers.modeling_utils.ALL_ATTENTION_FUNCTIONS").guarded
    # which sites bind the name (and so cannot raise): not an item assignment, not +=
    binds = {r.target for r in refs if r.kind is Kind.PATCH and r.sites[0].replaces}
    assert binds == {
        "transformers.models.llama.modeling_llama.LlamaAttention.forward",
        "transformers.models.llama.modeling_llama.LlamaRMSNorm.forward",  # setattr
        "transformers.utils.ExplicitEnum.FAST",  # extend_enum
        "transformers.utils.ExplicitEnum.SLOW",  # EnumType._add_member_
        "transformers.models.llama.modeling_llama.LlamaFlashAttention2.forward",
    }


def test_which_bindings_alias_an_upstream_object(tmp_path):
    refs = surface(
        tmp_path,
        {
            "m.py": """\
                import transformers
                import trl.trainer
                from transformers.initialization import no_init_weights
                from trl.experimental.orpo import ORPOTrainer

                def mine():
                    pass

                transformers.modeling_utils.no_init_weights = no_init_weights
                setattr(trl.trainer, "ORPOTrainer", ORPOTrainer)
                transformers.modeling_utils.PreTrainedModel.post_init = mine
                transformers.models.llama.modeling_llama.LlamaFlashAttention2 = None
                """
        },
    )
    aliases = {r.target: r.sites[0].aliases for r in refs if r.kind is Kind.PATCH}
    utils, initialization = "transformers.modeling_utils", "transformers.initialization"
    assert aliases == {
        f"{utils}.no_init_weights": f"{initialization}.no_init_weights",
        "trl.trainer.ORPOTrainer": "trl.experimental.orpo.ORPOTrainer",
        f"{utils}.PreTrainedModel.post_init": "",  # the project's code
        "transformers.models.llama.modeling_llama.LlamaFlashAttention2": "",
    }


def test_a_binding_of_the_projects_own_object_under_its_own_name_is_an_export(tmp_path):
    refs = surface(
        tmp_path,
        {
            "m.py": """                import transformers.models.gpt_oss.modeling_gpt_oss as m
                from transformers import PreTrainedModel
                from .helpers import Version

                def swiglu():
                    pass

                m.Version = Version
                setattr(m, "swiglu", swiglu)
                m.PreTrainedModel = PreTrainedModel
                m.forward = swiglu
                m.dtype = dtype
                """
        },
    )
    exports = {
        r.target.rpartition(".")[2]: r.sites[0].exports for r in refs if r.kind is Kind.PATCH
    }
    # upstream's object is an alias, another name a patch, an unbound name nobody's export
    assert exports == {
        "Version": True, "swiglu": True, "PreTrainedModel": False, "forward": False, "dtype": False
    }  # fmt: skip
    # what is the project's code, upstream would call in its own's place
    functions = {
        r.target.rpartition(".")[2]: r.sites[0].function for r in refs if r.kind is Kind.PATCH
    }
    assert functions == {
        "Version": False, "swiglu": True, "PreTrainedModel": False, "forward": True, "dtype": False
    }  # fmt: skip


def test_a_private_function_bound_under_its_own_name_and_called_nowhere_is_uncalled(tmp_path):
    # fastckpt: LlamaModel._prepare_decoder_attention_mask = _prepare_decoder_attention_mask,
    # a method 4.36 dropped; named again only in a comment
    refs = surface(
        tmp_path,
        {
            "patch.py": """                import transformers
                from transformers.models.llama import modeling_llama as ml

                def _prepare(self, mask):  # _prepare keeps the mask as it is
                    return mask

                def _shared(self):
                    return 1

                def _other(self):
                    return self._shared()

                def public(self):
                    return 1

                def _wrapped(self):  # lmflow's binding spans three lines
                    return 1

                ml.LlamaModel._wrapped = (
                    _wrapped
                )
                ml.LlamaModel._prepare = _prepare
                ml.LlamaModel._shared = _shared
                ml.LlamaModel._other = _other
                setattr(ml.LlamaModel, "public", public)
                """,
            "use.py": """                def run(model):
                    return model._other()
                """,
        },
    )
    uncalled = {
        r.target.rpartition(".")[2]: r.sites[0].uncalled for r in refs if r.kind is Kind.PATCH
    }
    # the project calls _shared through self, _other from another file; public is anyone's
    assert uncalled == {
        "_prepare": True,
        "_wrapped": True,
        "_shared": False,
        "_other": False,
        "public": False,
    }


def test_a_binding_the_projects_own_method_bound_beside_it_reads_through_self(tmp_path):
    # axolotl: FalconH1Mixer.forward = patched_mixer_forward, which calls the
    # self.cuda_kernels_forward it binds beside it
    refs = surface(
        tmp_path,
        {
            "m.py": """                from transformers.models.falcon_h1 import modeling_falcon_h1
                mod = modeling_falcon_h1

                def patch():
                    def kernels(self, x):
                        return x

                    def forward(self, x):
                        if getattr(self, "fast", False):
                            return self.kernels(x)
                        return self.slow(x)

                    mod.FalconH1Mixer.kernels = kernels
                    mod.FalconH1Mixer.forward = forward
                    mod.FalconH1Mixer.fast = True
                    mod.FalconH1Mixer.slow = kernels
                    mod.OtherMixer.kernels = kernels
                """
        },
    )
    read_by = {r.target.split(".", 4)[-1]: r.sites[0].read_by for r in refs if r.kind is Kind.PATCH}
    forward = ("transformers.models.falcon_h1.modeling_falcon_h1.FalconH1Mixer.forward",)
    assert read_by == {
        "FalconH1Mixer.kernels": forward,
        "FalconH1Mixer.forward": (),
        "FalconH1Mixer.fast": forward,
        "FalconH1Mixer.slow": forward,
        "OtherMixer.kernels": (),  # another owner: another object
    }


def test_one_object_bound_under_one_name_on_two_owners_in_one_function_is_elsewhere(tmp_path):
    refs = surface(
        tmp_path,
        {
            "m.py": """\
                import transformers
                from transformers import conversion_mapping

                def install(ar):
                    conversion_mapping.get_mapping = ar
                    transformers.modeling_utils.get_mapping = ar
                    transformers.modeling_utils.other = ar  # another name

                def elsewhere(ar):
                    transformers.integrations.get_mapping = ar  # another function
                """
        },
    )
    found = {r.target: r.sites[0].elsewhere for r in refs if r.kind is Kind.PATCH}
    assert found == {
        "transformers.conversion_mapping.get_mapping": ("transformers.modeling_utils.get_mapping",),
        "transformers.modeling_utils.get_mapping": ("transformers.conversion_mapping.get_mapping",),
        "transformers.modeling_utils.other": (),
        "transformers.integrations.get_mapping": (),
    }


def test_one_object_bound_to_two_names_of_one_owner_in_one_function_are_alternatives(tmp_path):
    refs = surface(
        tmp_path,
        {
            "m.py": """\
                from transformers.models.qwen2_vl import modeling_qwen2_vl as vl
                from transformers.models.llama import modeling_llama
                from .ops import LigerRMSNorm, LigerMLP

                def apply(rms_norm=True):
                    if rms_norm:
                        # < 5.2 reads Qwen2RMSNorm, >= 5.2 its own Qwen2VLRMSNorm
                        vl.Qwen2RMSNorm = LigerRMSNorm
                        vl.Qwen2VLRMSNorm = LigerRMSNorm
                    vl.Qwen2MLP = LigerMLP
                    modeling_llama.LlamaRMSNorm = LigerRMSNorm
                    vl.LayerNorm = None
                    vl.VisionNorm = None

                def other():
                    vl.VisionRMSNorm = LigerRMSNorm
                """
        },
    )
    alternatives = {
        r.target.rpartition(".")[2]: r.sites[0].alternatives for r in refs if r.kind is Kind.PATCH
    }
    vl = "transformers.models.qwen2_vl.modeling_qwen2_vl"
    assert alternatives == {
        "Qwen2RMSNorm": (f"{vl}.Qwen2VLRMSNorm",),
        "Qwen2VLRMSNorm": (f"{vl}.Qwen2RMSNorm",),
        "Qwen2MLP": (),  # another object
        "LlamaRMSNorm": (),  # another owner: another model's patch
        "LayerNorm": (),  # a literal is a stub per name
        "VisionNorm": (),
        "VisionRMSNorm": (),  # another function
    }


def test_guards_recognised(tmp_path):
    refs = surface(
        tmp_path,
        {
            "m.py": """\
                import contextlib
                from packaging.version import Version
                import transformers
                from transformers import trainer as t

                def patch():
                    if Version(transformers.__version__) >= Version("4.50"):
                        t.Trainer.a = 1
                    v = getattr(t.Trainer, "b", None)
                    with contextlib.suppress(AttributeError):
                        t.Trainer.c = 1
                    ok = hasattr(t, "X") and t.X.d
                    if not transformers.utils.is_torch_available():
                        return
                    t.Trainer.e = 1

                def plain():
                    t.Trainer.f = 1

                def floor():
                    if Version(transformers.__version__) < Version("4.46"):
                        raise ImportError("needs transformers 4.46")
                    t.Trainer.g = 1  # a miss still crashes: no silent skip
                """
        },
    )
    trainer = "transformers.trainer.Trainer"
    for name in "ace":
        assert one(refs, Kind.PATCH, f"{trainer}.{name}").guarded, name
    assert one(refs, Kind.ATTRIBUTE, f"{trainer}.b").guarded
    assert one(refs, Kind.ATTRIBUTE, "transformers.trainer.X.d").guarded
    assert not one(refs, Kind.PATCH, f"{trainer}.f").guarded
    assert not one(refs, Kind.PATCH, f"{trainer}.g").guarded
    assert not one(refs, Kind.ATTRIBUTE, "transformers.__version__").guarded


# --- sources and anchors ---------------------------------------------------------------


def test_getsource_and_anchors_followed_through_assignments_and_dedent(tmp_path):
    refs = surface(
        tmp_path,
        {
            "m.py": """\
                import inspect, re, textwrap
                from transformers import Trainer
                from transformers.models.llama import modeling_llama as ml

                OLD = "loss = loss / self.args.gradient_accumulation_steps"
                PATTERN = re.compile(r"def forward\\(self,.*?\\):", re.DOTALL)

                def patch():
                    source = inspect.getsource(Trainer.training_step)
                    text = source
                    if OLD in text:
                        text = text.replace(OLD, "loss = loss")
                    text = text.replace("loss = loss", "x")  # the project's own text
                    start = text.find("def training_step(")
                    body = textwrap.dedent(inspect.getsource(ml.LlamaModel.forward))
                    body = body.replace("    hidden = self.norm(hidden)\\n", "")
                    body = re.sub(r"return\\s+(\\w+)", "return fused", body, flags=re.M)
                    n = body.count("causal_mask")
                    if PATTERN.search(inspect.getsource(ml.LlamaAttention)):
                        pass
                """
        },
    )
    assert targets(refs, Kind.SOURCE) == {
        "transformers.Trainer.training_step",
        "transformers.models.llama.modeling_llama.LlamaModel.forward",
        "transformers.models.llama.modeling_llama.LlamaAttention",
    }
    assert anchors(refs, "transformers.Trainer.training_step") == {
        "loss = loss / self.args.gradient_accumulation_steps": Match.EXACT,
        "def training_step(": Match.EXACT,
    }
    assert anchors(refs, "transformers.models.llama.modeling_llama.LlamaModel.forward") == {
        "    hidden = self.norm(hidden)\n": Match.DEDENTED,
        r"(?m)return\s+(\w+)": Match.REGEX_DEDENTED,
        "causal_mask": Match.DEDENTED,
    }
    assert anchors(refs, "transformers.models.llama.modeling_llama.LlamaAttention") == {
        r"(?s)def forward\(self,.*?\):": Match.REGEX
    }
    anchor = one(refs, Kind.ANCHOR, "transformers.Trainer.training_step", "def training_step(")
    assert [(s.line, s.guarded) for s in anchor.sites] == [(14, False)]


def test_anchor_loops_over_pairs_dicts_and_constants_of_other_modules(tmp_path):
    refs = surface(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/strings.py": 'SHARED = "self.gradient_checkpointing"\n',
            "pkg/m.py": """\
                import inspect
                from transformers import Trainer
                from .strings import SHARED

                PAIRS = [("a_old", "a_new"), ("b_old", "b_new")]
                CODE = {"list": "x.mean()", "array": "y.mean()"}

                def patch():
                    src = inspect.getsource(Trainer.evaluation_loop)
                    for old, new in PAIRS:
                        src = src.replace(old, new)
                    for key, old in CODE.items():
                        src = src.replace(old, "nanmean")
                    for old, new in (("c_old", "c_new"),):
                        src = src.replace(old, new)
                    ok = all(value in src for value in CODE.values())
                    ok = SHARED in src and CODE["list"] in src
                """,
        },
    )
    assert set(anchors(refs, "transformers.Trainer.evaluation_loop")) == {
        "a_old",
        "b_old",
        "x.mean()",
        "y.mean()",
        "c_old",
        "self.gradient_checkpointing",
    }


def test_helpers_that_return_or_transform_source(tmp_path):
    refs = surface(
        tmp_path,
        {
            "pkg/__init__.py": "",
            "pkg/utils.py": """\
                import inspect
                import re
                import peft

                def safe_source(obj):
                    try:
                        return inspect.getsource(obj)
                    except OSError:
                        return ""

                def get_prep_code():
                    return inspect.getsource(peft.utils.other.prepare_model_for_kbit_training)

                def detab_code(code):
                    spaces = re.match(r"([\\s\\t]{1,})", code).group(0)
                    return re.sub(r"^" + spaces, "", code, flags=re.MULTILINE), spaces
                """,
            "pkg/m.py": """\
                from transformers import Trainer
                from pkg.utils import safe_source, get_prep_code, detab_code

                def patch():
                    src = safe_source(Trainer._maybe_log_save_evaluate)
                    if "tr_loss_scalar = " in src:
                        pass
                    prep = get_prep_code()
                    prep, _ = detab_code(prep)
                    prep = prep.replace("for param in model.parameters():\\n", "")
                """,
        },
    )
    assert "transformers.Trainer._maybe_log_save_evaluate" in targets(refs, Kind.SOURCE)
    assert anchors(refs, "transformers.Trainer._maybe_log_save_evaluate") == {
        "tr_loss_scalar = ": Match.EXACT
    }
    prep = "peft.utils.other.prepare_model_for_kbit_training"
    assert prep in targets(refs, Kind.SOURCE)
    # detab_code's own re.match runs on the text it is given (before it dedents it)
    assert anchors(refs, prep) == {
        "for param in model.parameters():\n": Match.DEDENTED,
        r"([\s\t]{1,})": Match.REGEX,
    }


def test_fstring_anchors_whole_when_literal_else_by_fragment(tmp_path):
    refs = surface(
        tmp_path,
        {
            "m.py": """\
                import inspect
                from transformers import Trainer
                NAME = "compute_loss"

                def patch(arg):
                    src = inspect.getsource(Trainer)
                    a = f"def {NAME}(self" in src
                    b = src.replace(f"self.{arg}.step(", "")
                """
        },
    )
    expected = {"def compute_loss(self", "self.", ".step("}
    assert set(anchors(refs, "transformers.Trainer")) == expected


# --- the project's own attributes ------------------------------------------------------


def test_own_attributes_are_not_dependencies(tmp_path):
    refs = surface(
        tmp_path,
        {
            "myproj/__init__.py": "",
            "myproj/patch.py": """\
                import inspect
                from transformers import Trainer
                from transformers.models.llama import modeling_llama as ml

                def fast(self):
                    pass

                def patch():
                    if hasattr(Trainer, "_original_evaluation_loop"):
                        return
                    Trainer._original_evaluation_loop = inspect.getsource(Trainer.evaluation_loop)
                    Trainer.evaluation_loop = fast
                    Trainer._myproj_patched = True
                    ml.LlamaModel.forward = fast
                    ml.LlamaModel.forward._is_fast = True
                    ml.LlamaModel._cache = {}
                    size = len(ml.LlamaModel._cache)
                    Trainer._custom = 1
                    Trainer._kept_step = Trainer.training_step
                    Trainer.training_step = fast

                def unpatch():
                    Trainer.training_step = Trainer._kept_step  # a restore keeps nothing
                    Trainer.flag = 1

                def check():
                    if hasattr(Trainer, "_original_evaluation_loop"):
                        return Trainer._original_evaluation_loop
                    return Trainer._mine_extra

                def wrap():
                    original = getattr(Trainer, "predict", None)
                    if original is None:
                        return
                    Trainer.predict = fast
                    Trainer.predict = original  # restored: still upstream's name

                def later():
                    done = getattr(Trainer.train, "_myproj_done", False)
                    return Trainer.flag, Trainer.myproj_public
                """,
        },
        own_attributes=("_custom",),
    )
    patched = targets(refs, Kind.PATCH)
    assert "transformers.Trainer.evaluation_loop" in patched
    assert "transformers.Trainer.training_step" in patched
    assert "transformers.models.llama.modeling_llama.LlamaModel.forward" in patched
    for own in (
        "transformers.Trainer._original_evaluation_loop",  # read only once known set
        "transformers.Trainer._myproj_patched",  # carries the project's name
        "transformers.models.llama.modeling_llama.LlamaModel.forward._is_fast",  # on its own fn
        "transformers.Trainer._custom",  # configured
        "transformers.Trainer._kept_step",  # upstream's original, kept beside it
    ):
        assert own not in patched, own
        assert own not in targets(refs, Kind.ATTRIBUTE), own
    # read elsewhere without a test: upstream must have it
    assert "transformers.Trainer.flag" in patched
    # read after being set proves nothing (a patch is normally used after it is made): it
    # stays a dependency, a false alarm own_attributes can silence, never a silent miss
    assert "transformers.models.llama.modeling_llama.LlamaModel._cache" in patched
    # asked for with getattr(..., None) and then replaced: a dependency, not the project's
    assert "transformers.Trainer.predict" in patched
    # never set by the project: a dependency like any other
    assert "transformers.Trainer._mine_extra" in targets(refs, Kind.ATTRIBUTE)
    # a marker read only (set elsewhere, on a copy) is the project's too; a public name is not
    assert "transformers.Trainer.train._myproj_done" not in targets(refs, Kind.ATTRIBUTE)
    assert "transformers.Trainer.myproj_public" in targets(refs, Kind.ATTRIBUTE)


def test_a_backfill_under_a_name_bound_to_an_absence_test_is_the_projects_own(tmp_path):
    # unsloth: added = not hasattr(cache_utils, "SlidingWindowCache"); if added: ... = Stub
    refs = surface(
        tmp_path,
        {
            "m.py": """\
                import transformers.cache_utils as cache_utils

                def stubs():
                    added = not hasattr(cache_utils, "SlidingWindowCache")
                    if added:
                        cache_utils.SlidingWindowCache = type("S", (), {})
                    present = hasattr(cache_utils, "DynamicCache")
                    if not present:
                        cache_utils.DynamicCache = type("D", (), {})
                    try:
                        yield
                    finally:
                        if added:
                            del cache_utils.SlidingWindowCache
                    cache_utils.OffloadedCache = None  # set with no test: upstream's name
                    # vllm: an alias from its new name, only where the old one is gone
                    old = getattr(cache_utils, "HybridCache", None)
                    new = getattr(cache_utils, "Cache", None)
                    if old is None and new is not None:
                        cache_utils.HybridCache = new
                    # oxrl: a stub bound where the import of that one name failed
                    try:
                        from transformers.cache_utils import StaticCache
                    except ImportError:
                        class StaticCache:
                            pass
                        cache_utils.StaticCache = StaticCache
                    # a handler of two imports runs where either fails: it may replace one
                    try:
                        from transformers.cache_utils import QuantizedCache, SinkCache
                    except ImportError:
                        cache_utils.QuantizedCache = type("Q", (), {})
                    # unsloth_zoo: past a return where it is there and not empty, so where
                    # it is not there; an `or` that does not need it gone leaves it open
                    mapping = getattr(cache_utils, "MAPPING", None)
                    if mapping is not None and len(mapping) > 0:
                        return
                    cache_utils.MAPPING = new
                    if not (hasattr(cache_utils, "ALIAS") or new is None):
                        cache_utils.ALIAS = new
                    if hasattr(cache_utils, "OTHER") or new is None:
                        cache_utils.OTHER = new
                    current = getattr(cache_utils, "NESTED", None)
                    if (current is None or len(current) == 0) and new is not None:
                        cache_utils.NESTED = new
                    # unsloth_zoo: a property put in only where the class has none
                    if not isinstance(cache_utils.__dict__.get("PROP"), property):
                        cache_utils.PROP = new
                    if not isinstance(getattr(cache_utils, "TEXT", ""), str):  # '' is one
                        cache_utils.TEXT = new
                """
        },
    )
    assert targets(refs, Kind.PATCH) == {
        "transformers.cache_utils.OffloadedCache",
        "transformers.cache_utils.QuantizedCache",
        "transformers.cache_utils.OTHER",
        "transformers.cache_utils.TEXT",
    }


def test_only_the_targets_top_level_packages_name_its_own_attributes(tmp_path):
    # a package vendored deep in the tree (its parent has no __init__.py) and a script
    # beside the packages are no names of the project's: "data" would claim every
    # private upstream name that contains it
    refs = surface(
        tmp_path,
        {
            "setup.py": "",
            "src/myproj/__init__.py": "",
            "src/myproj/patch.py": """\
                from trl import SFTTrainer

                def patch(fast):
                    SFTTrainer._prepare_dataset = fast
                    SFTTrainer._setup_done = True
                    SFTTrainer._myproj_done = True
                """,
            "tools/vendored/data_designer_seed/__init__.py": "",
        },
    )
    patched = targets(refs, Kind.PATCH)
    assert "trl.SFTTrainer._prepare_dataset" in patched
    assert "trl.SFTTrainer._setup_done" in patched
    assert "trl.SFTTrainer._myproj_done" not in patched  # src/myproj: the project's name


def test_a_stash_of_upstream_source_text_read_back_later_is_own(tmp_path):
    # axolotl and unsloth keep a method's getsource text on the class under a private name
    # (no hasattr test before it), and read it back the next time they patch
    refs = surface(
        tmp_path,
        {
            "proj/__init__.py": "",
            "proj/patch.py": """\
                import inspect
                from transformers import Trainer
                from transformers import trainer as trainer_module

                def source_of_loop():
                    return inspect.getsource(Trainer._inner_training_loop)

                def patch():
                    if Trainer._inner_training_loop.__name__ != "fast":
                        loop = source_of_loop()
                        Trainer._original_training_loop = loop
                    else:
                        loop = Trainer._original_training_loop
                    end = loop.find("\\n\\n")
                    Trainer._kept_text = inspect.getsource(Trainer.train).replace("a", "b")
                    Trainer._saved = Trainer._helper  # an object stash of a private name
                    Trainer._other_text = inspect.getsource(trainer_module.get_scheduler)
                    Trainer._same = inspect.getsource(Trainer._same)
                """,
        },
    )
    patched, read = targets(refs, Kind.PATCH), targets(refs, Kind.ATTRIBUTE)
    for own in ("transformers.Trainer._original_training_loop", "transformers.Trainer._kept_text"):
        assert own not in patched, own
        assert not any(r == own or r.startswith(f"{own}.") for r in read), own
    # the rule is no wider: the source of another object, of the name itself, or a private
    # original (a restore of a stash made the other way) keeps the assignment a patch
    for kept in ("_saved", "_other_text", "_same"):
        assert f"transformers.Trainer.{kept}" in patched, kept
    assert "transformers.Trainer._inner_training_loop" in targets(refs, Kind.SOURCE)


# --- errors ----------------------------------------------------------------------------


def test_a_file_that_does_not_parse_is_an_error_naming_it(tmp_path):
    with pytest.raises(ParseError, match=r"broken\.py.*line 2.*exclude"):
        surface(tmp_path, {"ok.py": "import transformers\n", "broken.py": "import trl\ndef (:\n"})


def test_no_upstream_no_references(tmp_path):
    assert surface(tmp_path, {"m.py": "import torch\ntorch.nn.Linear.forward = None\n"}) == ()


# --- reading large modules lazily ------------------------------------------------------


def test_functions_are_cut_from_the_text_and_keep_their_lines(tmp_path):
    refs = surface(
        tmp_path,
        {
            "m.py": '''\
                """Docstring.
                def not_code():
                """
                from transformers import Trainer
                TEMPLATE = """
                class Fake:
                    Trainer.inside_a_string = 1
                """

                @decorator(
                    arg=1,
                )
                def patch():
                    Trainer.decorated = 1

                class Helper:
                    def run(self):
                        return Trainer.in_class

                def unrelated():
                    return 1
                X = {
                1: Trainer.after_open_bracket}
                ''',
        },
    )
    assert {(r.target, r.sites[0].line) for r in refs if r.kind is not Kind.IMPORT} == {
        ("transformers.Trainer.decorated", 14),
        ("transformers.Trainer.in_class", 18),
        ("transformers.Trainer.after_open_bracket", 23),
    }


def test_a_class_is_walked_member_by_member_and_keeps_its_lines(tmp_path):
    refs = surface(
        tmp_path,
        {
            "m.py": '''\
                from transformers import Trainer

                class Patched(Trainer):
                    """A docstring.
                def not_a_member(self):
                """
                    limit = Trainer.default_limit

                    @property
                    def decorated(self):
                        return Trainer.in_property

                    def unrelated(self):
                        return 1

                    class Inner:
                        def run(self):
                            return Trainer.in_inner

                    base = Trainer  # read by a member's decorator and default, in the class

                    @base.register
                    def uses_the_class_names(self, limit=base.default_limit):
                        return limit

                    async def later(self):
                        text = f"""
                    def in_a_string(): {Trainer.in_fstring}
                """
                        return text
                ''',
        },
    )
    assert {(r.target, r.sites[0].line) for r in refs if r.kind is not Kind.IMPORT} == {
        ("transformers.Trainer.default_limit", 7),
        ("transformers.Trainer.in_property", 11),
        ("transformers.Trainer.in_inner", 18),
        ("transformers.Trainer.register", 22),
        ("transformers.Trainer.in_fstring", 28),
    }
    lines = [
        site.line for site in one(refs, Kind.ATTRIBUTE, "transformers.Trainer.default_limit").sites
    ]
    assert lines == [7, 23]


def test_a_string_the_cuts_mistake_for_code_leaves_the_file_parsed_whole(tmp_path):
    # the triple quote inside a one-line string pairs with B's opening quote, so the cut
    # sees `def inside` as code; the file's own parse knows it is text
    refs = surface(
        tmp_path,
        {
            "m.py": """\
                from transformers import Trainer
                A = '\"\"\"'
                B = \"\"\"
                def inside():
                    return Trainer.in_a_string
                \"\"\"
                def real():
                    return Trainer.real
                """,
        },
    )
    assert {(r.target, r.sites[0].line) for r in refs if r.kind is not Kind.IMPORT} == {
        ("transformers.Trainer.real", 8),
    }


def test_an_except_import_error_after_upstream_imports_only_is_their_fallback(tmp_path):
    files = {
        "proj/__init__.py": "",
        "proj/ds.py": """\
            def zero3():
                try:
                    from transformers.integrations import is_deepspeed_zero3_enabled
                except ImportError:
                    from transformers.deepspeed import is_deepspeed_zero3_enabled
                return is_deepspeed_zero3_enabled()

            def other():
                try:
                    import deepspeed
                    from transformers.integrations import HfDeepSpeedConfig
                except ImportError:
                    from transformers.deepspeed import HfDeepSpeedConfig
                return HfDeepSpeedConfig
        """,
    }
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    refs = {r.target: r for r in extract(tmp_path, sorted(files), upstream=("transformers",))}
    (site,) = refs["transformers.deepspeed.is_deepspeed_zero3_enabled"].sites
    assert site.fallback_of == ("transformers.integrations.is_deepspeed_zero3_enabled",)
    # deepspeed (not upstream) may raise ImportError too: no fallback of upstream alone
    (site,) = refs["transformers.deepspeed.HfDeepSpeedConfig"].sites
    assert site.fallback_of == ()


def test_a_presence_test_makes_what_follows_require_what_it_found(tmp_path):
    files = {
        "proj/__init__.py": "",
        "proj/npu.py": """\
            from transformers.models.qwen2_5_vl import modeling_qwen2_5_vl as m

            def patch(f):
                if hasattr(m, "Qwen2RMSNorm"):
                    m.Qwen2RMSNorm.forward = f
                else:
                    m.Qwen2_5_VLRMSNorm.forward = f
        """,
        "proj/tuners.py": """\
            try:
                from peft import BoneModel
            except ImportError:
                BoneModel = None

            try:
                from peft import LoraModel
            except ImportError:
                raise ImportError("peft is too old")

            def hook(self):
                pass

            def patch():
                if BoneModel is not None:
                    BoneModel._create_and_replace = hook
                LoraModel._create_and_replace = hook

            def wrapper():
                try:
                    from peft.tuners.lora.layer import ParamWrapper
                except ImportError:
                    return
                ParamWrapper.get_param = hook
        """,
    }
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    refs = extract(tmp_path, sorted(files), upstream=("transformers", "peft"))

    def required(target: str, kind: Kind) -> list[tuple[str, ...]]:
        (found,) = [r for r in refs if r.target == target and r.kind is kind]
        return [site.requires for site in found.sites]

    qwen = "transformers.models.qwen2_5_vl.modeling_qwen2_5_vl"
    assert required(f"{qwen}.Qwen2RMSNorm.forward", Kind.PATCH) == [(f"{qwen}.Qwen2RMSNorm",)]
    assert required(f"{qwen}.Qwen2_5_VLRMSNorm.forward", Kind.PATCH) == [()]
    # The guarded import itself still counts where it fails: what the project does with
    # the None it leaves is not followed (liger defines its own classes only where it is
    # there, and imports them unguarded elsewhere).
    assert required("peft.BoneModel", Kind.IMPORT) == [()]
    assert required("peft.BoneModel._create_and_replace", Kind.PATCH) == [("peft.BoneModel",)]
    layer = "peft.tuners.lora.layer.ParamWrapper"
    assert required(f"{layer}.get_param", Kind.PATCH) == [(layer,)]
    # An ImportError that is raised again is no presence test: the import must be there.
    assert required("peft.LoraModel", Kind.IMPORT) == [()]
    assert required("peft.LoraModel._create_and_replace", Kind.PATCH) == [()]


def test_a_name_bound_in_a_fallback_carries_it_to_its_uses(tmp_path):
    files = {
        "proj/__init__.py": "",
        "proj/model.py": """\
            from transformers import AutoModel

            try:
                from transformers import AutoModelForImageTextToText
            except ImportError:
                AutoModelForImageTextToText = AutoModel

            def pick(config):
                return config in AutoModelForImageTextToText._model_mapping

            def plain(config):
                return config in AutoModel._model_mapping
        """,
    }
    for name, text in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    refs = extract(tmp_path, sorted(files), upstream=("transformers",))
    (found,) = [r for r in refs if r.target == "transformers.AutoModel._model_mapping"]
    by_line = {site.line: site.fallback_of for site in found.sites}
    # used through the fallback binding: only where the import it falls back from fails
    assert by_line == {9: ("transformers.AutoModelForImageTextToText",), 12: ()}


def where(refs, target: str) -> list[tuple[int, tuple[str, ...], tuple]]:
    """Each site of ``target``: its line, the imports it falls back from, its window."""
    (found,) = [r for r in refs if r.target == target]
    return [(s.line, s.fallback_of, s.versions) for s in found.sites]


NEW, OLD = "transformers.integrations.tp", "transformers.modeling_utils"


@pytest.mark.parametrize(
    ("binds", "plan"),
    [
        (
            f"try:\n    from {NEW} import Plan\nexcept ImportError:\n    from {OLD} import Plan",
            "Plan",
        ),
        # a module bound by importlib is an import too: its handler is the fallback
        (
            f"try:\n    tp = importlib.import_module('{NEW}')\n"
            f"except ImportError:\n    tp = __import__('{OLD}', fromlist=['Plan'])",
            "tp.Plan",
        ),
    ],
)
def test_a_name_bound_in_a_try_and_its_fallback_is_used_through_both(tmp_path, binds, plan):
    name = plan.partition(".")[0]
    tried = f"{NEW}.Plan" if name == "Plan" else NEW  # the import the handler falls back from
    refs = surface(
        tmp_path,
        {
            "proj/__init__.py": "",
            "proj/compat.py": f"import importlib\n{binds}\n{plan}.shard(1)\n",
            "proj/use.py": f"from proj.compat import {name}\n{plan}.gather = None\n",
        },
    )
    # where the new home imports, the use goes through it: its members are checked there
    assert where(refs, f"{NEW}.Plan.shard") == [(6, (), ())]
    assert where(refs, f"{OLD}.Plan.shard") == [(6, (tried,), ())]
    assert where(refs, f"{NEW}.Plan.gather") == [(2, (), ())]
    assert where(refs, f"{OLD}.Plan.gather") == [(2, (tried,), ())]


def test_a_use_through_the_other_binding_runs_only_where_that_object_is_there(tmp_path):
    # fms-acceleration-peft: the mapping peft 0.19 renamed, bound from either name
    mapping = "peft.peft_model.PEFT_TYPE_TO_MODEL_MAPPING"
    source = f"""\
        try:
            from {mapping.rpartition(".")[0]} import PEFT_TYPE_TO_MODEL_MAPPING as M
        except ImportError:
            from peft.peft_model import PEFT_TYPE_TO_TUNER_MAPPING as M
        M["LORA"] = object
    """
    refs = surface(tmp_path, {"proj/__init__.py": "", "proj/m.py": source})
    (site,) = one(refs, Kind.PATCH, mapping).sites
    assert site.requires == (mapping,)


def test_a_name_bound_on_both_sides_of_a_version_test_is_used_through_each(tmp_path):
    source = f"""\
        import transformers
        from packaging.version import Version
        if Version(transformers.__version__) >= Version("5"):
            from {NEW} import Plan
        else:
            from {OLD} import Plan
        Plan.shard(1)
        from transformers import Trainer as T
        T = transformers.Seq2SeqTrainer  # on every path after the first: that one is gone
        T.train
    """
    refs = surface(tmp_path, {"proj/__init__.py": "", "proj/m.py": source})
    assert where(refs, f"{NEW}.Plan.shard") == [(7, (), (("transformers", ">=5"),))]
    assert where(refs, f"{OLD}.Plan.shard") == [(7, (), (("transformers", "<5"),))]
    assert "transformers.Trainer.train" not in targets(refs, Kind.ATTRIBUTE)
    assert where(refs, "transformers.Seq2SeqTrainer.train") == [(10, (), ())]


DISPATCH = """\
    from transformers import AutoModel, T5EncoderModel, DebertaV2Model

    def encoder(config, fast):
        kind = config.__class__.__name__
        if kind in ("T5Config", "MT5Config"):
            Model = T5EncoderModel
        elif kind == "DebertaV2Config":
            Model = DebertaV2Model
        else:
            Model = AutoModel
        if fast:
            return Model.fast_path
        {use}
"""


@pytest.mark.parametrize(
    ("use", "through"),
    [
        # gliclass: the branches that chose the class decide which reads it takes
        (
            'if kind in ("T5Config", "DebertaV2Config"):\n'
            "            return Model._from_config(config)\n"
            "        return Model.from_config(config)",
            {
                "T5EncoderModel._from_config",
                "DebertaV2Model._from_config",
                "T5EncoderModel.from_config",  # an MT5Config gets there
                "AutoModel.from_config",
            },
        ),
        (
            'if kind not in ("T5Config", "MT5Config"):\n            return Model.load',
            {"DebertaV2Model.load", "AutoModel.load"},
        ),
        (
            'if kind == "T5Config" or kind == "MT5Config":\n            return Model.load',
            {"T5EncoderModel.load"},
        ),
        (
            'if not kind.startswith("T5"):\n            return Model.load',
            {"T5EncoderModel.load", "DebertaV2Model.load", "AutoModel.load"},
        ),
        # the same test with its operands swapped reads the same
        (
            'if "DebertaV2Config" == kind:\n            return Model.load',
            {"DebertaV2Model.load"},
        ),
        # a test of another name, or one not about strings, rules nothing out
        (
            'if config.kind == "T5Config":\n            return Model.load',
            {"T5EncoderModel.load", "DebertaV2Model.load", "AutoModel.load"},
        ),
    ],
)
def test_a_name_bound_on_one_value_of_a_tested_name_is_not_used_where_that_value_is_ruled_out(
    tmp_path, use, through
):
    refs = surface(tmp_path, {"proj/__init__.py": "", "proj/m.py": DISPATCH.format(use=use)})
    loads = {r.target.removeprefix("transformers.") for r in refs if r.kind is Kind.ATTRIBUTE}
    assert (
        loads - {f"{m}.fast_path" for m in ("T5EncoderModel", "DebertaV2Model", "AutoModel")}
        == through
    )
    assert {f"{m}.fast_path" for m in ("T5EncoderModel", "DebertaV2Model", "AutoModel")} <= loads


@pytest.mark.parametrize(
    "rebinding",
    [
        "kind = kind.lower()",  # bound twice: the test after may see another value
        "global kind",
    ],
)
def test_a_tested_name_that_may_change_rules_nothing_out(tmp_path, rebinding):
    source = DISPATCH.replace("        if fast:", f"        {rebinding}\n        if fast:").format(
        use='if kind == "T5Config":\n            return Model.load'
    )
    refs = surface(tmp_path, {"proj/__init__.py": "", "proj/m.py": source})
    loads = {r.target.removeprefix("transformers.") for r in refs if r.kind is Kind.ATTRIBUTE}
    assert {"T5EncoderModel.load", "DebertaV2Model.load", "AutoModel.load"} <= loads


def test_a_tested_name_bound_in_a_loop_rules_nothing_out(tmp_path):
    source = """\
        from transformers import AutoModel, T5EncoderModel

        def encoders(configs):
            for config in configs:
                kind = config.kind
                if kind == "T5Config":
                    Model = T5EncoderModel
                if kind == "BertConfig":
                    Model.load  # the one an earlier config chose
                Model = AutoModel
    """
    refs = surface(tmp_path, {"proj/__init__.py": "", "proj/m.py": source})
    assert "transformers.T5EncoderModel.load" in targets(refs, Kind.ATTRIBUTE)


def test_a_site_is_after_the_upstream_imports_its_function_made_before_it(tmp_path):
    refs = surface(
        tmp_path,
        {
            "proj/__init__.py": "",
            "proj/omni.py": """\
                from transformers import AutoModel

                def load(model):
                    from transformers import Qwen3OmniModel
                    if model:
                        from transformers import Qwen3OmniConfig
                    Qwen3OmniModel._no_split_modules.append("Layer")
                    AutoModel.from_config(model)

                def other():
                    AutoModel.register(1)
            """,
        },
    )

    def after(target: str) -> list[tuple[str, ...]]:
        return [site.after for site in one(refs, Kind.ATTRIBUTE, target).sites]

    # the import in the if's body does not come before what follows the if
    omni = ("transformers.Qwen3OmniModel",)
    assert after("transformers.Qwen3OmniModel._no_split_modules.append") == [omni]
    assert after("transformers.AutoModel.from_config") == [omni]
    # a module-level import, and another function's, is nothing a function's site is after
    assert after("transformers.AutoModel.register") == [()]
    assert [s.after for s in one(refs, Kind.IMPORT, "transformers.Qwen3OmniModel").sites] == [()]


@pytest.mark.parametrize(
    ("package", "top"),
    [("ns/pkg", "ns.pkg.utils"), ("ns/pkg", "pkg.utils"), ("ns/sub/pkg", "ns.sub.pkg.utils")],
)
def test_a_namespace_package_is_part_of_its_modules_names_where_the_project_spells_it(
    tmp_path, package, top
):
    # optimum-intel: optimum/ has no __init__.py, and the project imports optimum.intel.utils;
    # a checkout's folder above its packages, never spelled, is no part of a name;
    # optimum-onnx: optimum/exporters/ has none either (optimum.exporters.onnx)
    helper = (
        "import transformers\nfrom packaging import version\n"
        "IS_V5 = version.parse(transformers.__version__) >= version.parse('5.0.0')\n"
    )
    user = f"from {top} import IS_V5\nif IS_V5:\n    from transformers.integrations import moe\n"
    refs = surface(
        tmp_path,
        {f"{package}/__init__.py": "", f"{package}/utils.py": helper, f"{package}/m.py": user},
    )
    found = one(refs, Kind.IMPORT, "transformers.integrations.moe")
    assert [dict(s.versions) for s in found.sites] == [{"transformers": ">=5.0.0"}]


@pytest.mark.parametrize(
    ("path", "target", "named_for"),
    [
        ("proj/lowering/qwen3_vl.py", "transformers.masking_utils", "transformers.models.qwen3_vl"),
        ("proj/qwen3_vl/__init__.py", "transformers.masking_utils", "transformers.models.qwen3_vl"),
        ("proj/lowering/qwen3_vl.py", "trl.core", ""),  # model packages are transformers'
        ("proj/Qwen3VL.py", "transformers.masking_utils", ""),  # no model package's name
    ],
)
def test_a_site_knows_the_model_its_module_is_named_for(tmp_path, path, target, named_for):
    source = f"def lower():\n    import {target}\n"
    refs = surface(tmp_path, {"proj/__init__.py": "", path: source})
    (found,) = [r for r in refs if r.target == target]
    assert [site.named_for for site in found.sites] == [named_for]


@pytest.mark.parametrize(
    ("package", "body", "named"),
    [
        ("", "import transformers.masking_utils\n", True),  # imported only when asked for
        # editscore's backbones: the package imports the model's module inside a method
        (
            "def load():\n    from .qwen3_vl import lower\n",
            "import transformers.masking_utils\n",
            True,
        ),
        # brute-force-training's: every model's module with the package, whoever uses it
        ("from .qwen3_vl import lower\n", "import transformers.masking_utils\n", False),
        (
            "from .qwen3_vl import lower\n",
            "def lower():\n    import transformers.masking_utils\n",
            True,
        ),
        # upstream's own model module imported there says nothing of the project's
        (
            "from transformers.models.qwen3_vl import X\n",
            "import transformers.masking_utils\n",
            True,
        ),
    ],
)
def test_a_module_level_site_is_named_for_the_model_unless_the_package_imports_it_eagerly(
    tmp_path, package, body, named
):
    files = {"proj/__init__.py": package, "proj/qwen3_vl.py": body}
    (found,) = [r for r in surface(tmp_path, files) if r.target == "transformers.masking_utils"]
    expected = "transformers.models.qwen3_vl" if named else ""
    assert [site.named_for for site in found.sites] == [expected]


MATCHED = """\
    from transformers import AutoModel, T5EncoderModel, DebertaV2Model

    def encoder(kind):
        match kind:
            case "T5Config" | "MT5Config":
                Model = T5EncoderModel
            case "DebertaV2Config":
                Model = DebertaV2Model
            case _:
                Model = AutoModel
        Model.everywhere
        if kind == "DebertaV2Config":
            Model.deberta_only
"""


def test_a_name_bound_in_each_case_of_a_match_is_used_through_each(tmp_path):
    refs = surface(tmp_path, {"proj/__init__.py": "", "proj/m.py": MATCHED})
    loads = {r.target.removeprefix("transformers.") for r in refs if r.kind is Kind.ATTRIBUTE}
    assert loads == {
        "T5EncoderModel.everywhere",
        "DebertaV2Model.everywhere",
        "AutoModel.everywhere",
        "DebertaV2Model.deberta_only",  # the wildcard case runs only for the other kinds
    }
