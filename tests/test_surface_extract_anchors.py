"""Anchors extraction follows past the function that read the source: helpers given the
text, declared source registries, getsource(eval(...)); and what it must not guess."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from canary.errors import ConfigError
from canary.surface.config import SourceRegistry, config_from_table
from canary.surface.extract import Survey, survey
from canary.surface.model import Kind, Match

UPSTREAM = ("transformers", "trl", "peft")
RL = SourceRegistry(
    registry="pkg.rl.RL_FUNCTIONS",
    parameter="function",
    selector="function_name",
    sources=("trl.trainer.{key}.{class}.{name}",),
    classes={"grpo_trainer": "GRPOTrainer", "sft_trainer": "SFTTrainer"},
)


def run(tmp_path: Path, files: dict[str, str], **options) -> Survey:
    for name, text in {"pkg/__init__.py": "", **files}.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))
    return survey(tmp_path, sorted({"pkg/__init__.py", *files}), upstream=UPSTREAM, **options)


def anchors(result: Survey) -> dict[tuple[str, str], tuple[Match | None, list]]:
    return {
        (r.target, r.anchor): (r.match, [(s.path, s.line) for s in r.sites])
        for r in result.references
        if r.kind is Kind.ANCHOR
    }


def test_a_helper_given_the_source_applies_its_anchors_to_it(tmp_path):
    result = run(
        tmp_path,
        {
            "pkg/edits.py": """\
                import re

                def swap(text, old, new):
                    if old not in text:
                        return text
                    return text.replace(old, new)

                def fix_loss(function):
                    function = swap(function, "loss = loss / n", "loss = loss / m")
                    return re.sub(r"return (\\w+)", r"return \\1.float()", function)
                """,
            "pkg/patch.py": """\
                import inspect
                from transformers import Trainer
                from pkg.edits import fix_loss

                def patch():
                    source = inspect.getsource(Trainer.compute_loss)
                    source = fix_loss(source)
                """,
        },
    )
    target = "transformers.Trainer.compute_loss"
    assert anchors(result) == {
        # a helper of a helper: the literal arguments are followed too, sites are the helper's
        (target, "loss = loss / n"): (Match.EXACT, [("pkg/edits.py", 4), ("pkg/edits.py", 6)]),
        (target, r"return (\w+)"): (Match.REGEX, [("pkg/edits.py", 10)]),
    }


def test_a_helper_not_given_a_source_yields_no_anchor(tmp_path):
    result = run(
        tmp_path,
        {
            "pkg/m.py": """\
                def swap(text):
                    return text.replace("a", "b")

                def use(name):
                    return swap(name + "x")
                """
        },
    )
    assert anchors(result) == {}


RL_FILES = {
    "pkg/rl.py": """\
        from collections import defaultdict
        import re

        RL_FUNCTIONS = defaultdict(list)

        def grpo_prepare(function_name, function):
            if "already" in function:
                return function
            if function_name != "_prepare_inputs":
                return function
            if "_pkg_marker" in function:
                return function
            return function.replace("with torch.no_grad():", "with ctx:")

        def shared(function_name, function):
            function = function.replace("self.model", "model")
            if function_name == "compute_loss" or function_name in ("training_step",):
                function = re.sub(r"loss\\s*/\\s*n", "loss", function)
            elif function_name == "__init__":
                function = function.replace("_pkg_done", "")
            return function

        RL_FUNCTIONS["grpo_trainer"].append(grpo_prepare)
        RL_FUNCTIONS["sft_trainer"].extend([shared])
        RL_FUNCTIONS["ppo_trainer"].append(shared)
        """,
    "pkg/use.py": """\
        from pkg.rl import RL_FUNCTIONS as FUNCS

        def more(function_name, function):
            if function_name not in {"train"}:
                return function
            return function.replace("self.args.max_steps", "steps")

        FUNCS["grpo_trainer"] += [more]

        def first(function_name, function):
            if function_name == "train":
                function = function.replace("self.state.global_step", "step")
            return function

        FUNCS["grpo_trainer"].insert(FUNCS["grpo_trainer"].index(more), first)
        """,
}


def test_a_declared_registry_gives_its_functions_the_selected_methods_source(tmp_path):
    result = run(tmp_path, RL_FILES, registries=[RL])
    grpo, sft = "trl.trainer.grpo_trainer.GRPOTrainer", "trl.trainer.sft_trainer.SFTTrainer"
    assert anchors(result) == {
        (f"{grpo}._prepare_inputs", "with torch.no_grad():"): (Match.EXACT, [("pkg/rl.py", 13)]),
        (f"{sft}.compute_loss", r"loss\s*/\s*n"): (Match.REGEX, [("pkg/rl.py", 18)]),
        (f"{sft}.training_step", r"loss\s*/\s*n"): (Match.REGEX, [("pkg/rl.py", 18)]),
        (f"{grpo}.train", "self.args.max_steps"): (Match.EXACT, [("pkg/use.py", 6)]),
        (f"{grpo}.train", "self.state.global_step"): (Match.EXACT, [("pkg/use.py", 12)]),
    }
    assert result.skipped == {
        # "already" and the marker: what the patch adds, not what it needs
        "'if x in source: return' (x is what the patch would add)": 2,
        "anchor naming the project's own marker (_unsloth_...)": 1,
        # shared's first replace runs for every method: which one is not known
        "anchor on a registered source where no test selected the method": 1,
        # ppo_trainer has no class in the declaration
        "registered in pkg.rl.RL_FUNCTIONS['ppo_trainer']: no class given": 1,
    }


def test_without_the_declaration_a_registry_yields_nothing(tmp_path):
    assert anchors(run(tmp_path, RL_FILES)) == {}


def test_a_source_of_a_literal_eval_is_followed(tmp_path):
    result = run(
        tmp_path,
        {
            "pkg/m.py": """\
                from inspect import getsource
                import trl
                from trl.trainer import sft_trainer

                def patch(name):
                    for function_name in ("_prepare_dataset", "_prepare_non_packed_dataloader"):
                        function = getsource(eval(f"sft_trainer.{function_name}"))
                        function = function.replace("tokenizer(", "processing_class(")
                    function = getsource(eval(f"trl.trainer.{name}"))
                    function = function.replace("unknown target", "")
                """
        },
    )
    sft = "trl.trainer.sft_trainer"
    assert anchors(result) == {
        (f"{sft}._prepare_dataset", "tokenizer("): (Match.EXACT, [("pkg/m.py", 8)]),
        (f"{sft}._prepare_non_packed_dataloader", "tokenizer("): (Match.EXACT, [("pkg/m.py", 8)]),
    }
    sources = {r.target for r in result.references if r.kind is Kind.SOURCE}
    assert sources == {f"{sft}._prepare_dataset", f"{sft}._prepare_non_packed_dataloader"}
    assert result.skipped == {"getsource(eval(...)) of a string not known statically": 1}


def test_a_precondition_is_an_anchor_and_an_already_done_test_is_not(tmp_path):
    result = run(
        tmp_path,
        {
            "pkg/m.py": """\
                import inspect
                from transformers import Trainer

                def patch():
                    source = inspect.getsource(Trainer.training_step)
                    if "num_items_in_batch" not in source:
                        return
                    if "loss *= 2" in source or "del inputs" not in source:
                        return
                    source = source.replace("loss = loss / n", "loss *= 2")
                """
        },
    )
    target = "transformers.Trainer.training_step"
    assert set(anchors(result)) == {
        (target, "num_items_in_batch"),
        (target, "del inputs"),
        (target, "loss = loss / n"),
    }


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"parameter": "f", "source": "trl.X"}, "registry is required"),
        ({"registry": "RL", "parameter": "f", "source": "trl.X"}, "must be dotted"),
        ({"registry": "p.R", "parameter": "f", "source": "trl.{key}.{name}"}, "go together"),
        ({"registry": "p.R", "parameter": "f", "source": "trl.{key}.{cls}"}, "has {cls}"),
        ({"registry": "p.R", "parameter": "f", "source": "trl.{class}"}, "give classes"),
        ({"registry": "p.R", "parameter": "f", "source": "t.X", "extra": 1}, "unknown key"),
    ],
)
def test_a_bad_source_registry_names_the_key_and_the_fix(entry, message):
    with pytest.raises(ConfigError, match=message):
        config_from_table({"source_registries": [entry]}, origin="pyproject.toml")


def test_the_unsloth_example_declaration_loads():
    from canary.surface.config import load_config

    example = Path(__file__).parent.parent / "examples" / "unsloth-surface.toml"
    (registry,) = load_config(example).source_registries
    assert registry.registry == "unsloth.models.rl_replacements.RL_FUNCTIONS"
    assert registry.sources_of("grpo_trainer") == ("trl.trainer.grpo_trainer.GRPOTrainer.{name}",)
    assert registry.sources_of("no_such_trainer") == ()


def test_function_level_imports_decide_whether_a_function_is_read(tmp_path):
    result = run(
        tmp_path,
        {
            "pkg/bound.py": """\
                from transformers import Trainer

                def plain():
                    return 1
                """,
            "pkg/m.py": """\
                import transformers

                def uses_a_plain_helper(x):
                    from .bound import plain
                    return plain.__name__, x.Trainer.compute_loss

                def uses_the_bound_name():
                    from .bound import (
                        plain,
                        Trainer,
                    )
                    return Trainer.training_step

                def imports_two_modules():
                    import os, peft
                    return peft.PeftModel.forward
                """,
        },
    )
    attributes = {r.target for r in result.references if r.kind is Kind.ATTRIBUTE}
    assert attributes == {"transformers.Trainer.training_step", "peft.PeftModel.forward"}


def test_forked_workers_find_what_one_process_finds(tmp_path):
    files = {
        f"pkg/m{i}.py": f"""\
            import inspect
            from transformers import Trainer
            from pkg.rl import RL_FUNCTIONS

            def patch{i}():
                src = inspect.getsource(Trainer.method{i})
                if "x{i}" not in src:
                    return
                Trainer.method{i} = None
            """
        for i in range(20)
    }
    files.update(RL_FILES)
    one = run(tmp_path, files, registries=[RL], workers=1)
    forked = run(tmp_path, files, registries=[RL], workers=2)
    assert forked == one
    assert len([r for r in one.references if r.kind is Kind.ANCHOR]) == 20 + 5


def test_an_upstream_object_given_to_a_helper_is_patched_and_read_there(tmp_path):
    result = run(
        tmp_path,
        {
            "pkg/utils.py": """\
                import inspect

                def patch_function(target, name, new, force=False):
                    if not hasattr(target, name):
                        return False
                    setattr(target, f"_pkg_original_{name}", getattr(target, name))
                    setattr(target, name, new)
                    return True

                def fix_init(module):
                    source = inspect.getsource(module.__init__)
                    return source.replace("self.scaling =", "self.scaling = 1 *")

                def describe(model_class):
                    return model_class.__name__
                """,
            "pkg/m.py": """\
                from transformers.models.llama.modeling_llama import LlamaAttention, LlamaMLP
                from pkg.utils import patch_function, fix_init, describe

                def mlp_forward(self, x):
                    return x

                patch_function(LlamaMLP, "forward", mlp_forward)
                patch_function(target=LlamaAttention, name="forward", new=None)
                fix_init(LlamaAttention)
                describe(LlamaMLP)
                """,
        },
    )
    llama = "transformers.models.llama.modeling_llama"
    by_kind = {
        kind: {(r.target, r.anchor, tuple((s.path, s.line, s.guarded) for s in r.sites))
               for r in result.references if r.kind is kind}
        for kind in (Kind.PATCH, Kind.SOURCE, Kind.ANCHOR)
    }  # fmt: skip
    # the helper's own hasattr test guards its setattr; its _pkg_original_* stash is its own
    assert by_kind[Kind.PATCH] == {
        (f"{llama}.LlamaMLP.forward", None, (("pkg/utils.py", 7, True),)),
        (f"{llama}.LlamaAttention.forward", None, (("pkg/utils.py", 7, True),)),
    }
    assert by_kind[Kind.SOURCE] == {
        (f"{llama}.LlamaAttention.__init__", None, (("pkg/utils.py", 11, False),))
    }
    assert by_kind[Kind.ANCHOR] == {
        (f"{llama}.LlamaAttention.__init__", "self.scaling =", (("pkg/utils.py", 12, False),))
    }


# --- how the project tests its anchors (canary.surface.anchortests) ---------------------

PATCH_HEAD = """\
    import inspect, re, logging
    from transformers import Trainer

    def patch():
        src = inspect.getsource(Trainer.compute_loss)
"""


def anchor_sites(tmp_path: Path, body: str) -> dict[str, list[tuple[int, bool, tuple[str, ...]]]]:
    """Each anchor of ``body`` (the rest of ``patch()``, after it read ``src``): its sites'
    (line, guarded, alternatives)."""
    text = PATCH_HEAD + textwrap.indent(textwrap.dedent(body), " " * 8)
    result = run(tmp_path, {"pkg/patch.py": text})
    return {
        r.anchor: [(s.line, s.guarded, s.alternatives) for s in r.sites]
        for r in result.references
        if r.kind is Kind.ANCHOR
    }


def test_two_spellings_tested_with_or_are_alternatives_of_each_other(tmp_path):
    found = anchor_sites(tmp_path, 'if "loss *=" in src or "loss*=" in src:\n    pass\n')
    assert found == {"loss *=": [(6, True, ("loss*=",))], "loss*=": [(6, True, ("loss *=",))]}


def test_a_search_tried_where_the_first_found_nothing_is_its_alternative(tmp_path):
    body = """\
        m = re.search(r"a = 1", src)
        if m is None:
            m = re.search(r"a=1", src)
        if m is None:
            return src
    """
    assert anchor_sites(tmp_path, body) == {
        "a = 1": [(6, True, ("a=1",))],
        "a=1": [(8, True, ("a = 1",))],
    }


def test_the_rest_after_a_replace_that_applied_returned_is_the_other_spelling(tmp_path):
    body = """\
        new = src.replace("x = 1", "x = 2")
        if new != src:
            return new
        return src.replace("x=1", "x=2")
    """
    # the rest is the code for the other shape: guarded, as after a version test
    assert anchor_sites(tmp_path, body) == {
        "x = 1": [(6, True, ("x=1",))],
        "x=1": [(9, True, ("x = 1",))],
    }


def test_an_elif_chain_of_in_tests_is_one_group_of_alternatives(tmp_path):
    body = 'if "kv[a]" in src:\n    m = 1\nelif "kv[b]" in src:\n    m = 2\nelse:\n    return\n'
    assert {a: s[0][2] for a, s in anchor_sites(tmp_path, body).items()} == {
        "kv[a]": ("kv[b]",),
        "kv[b]": ("kv[a]",),
    }


def test_a_text_whose_absence_triggers_the_patch_is_no_anchor(tmp_path):
    trigger = 'if "for m in self.modules()" not in src:\n    Trainer.x = 1\n'
    result = run(tmp_path, {"pkg/patch.py": PATCH_HEAD + textwrap.indent(trigger, " " * 8)})
    assert not [r for r in result.references if r.kind is Kind.ANCHOR]
    assert any("absent x is when the patch applies" in why for why in result.skipped)


def test_a_missing_text_that_is_only_reported_is_a_presence_test_not_a_trigger(tmp_path):
    found = anchor_sites(tmp_path, 'if "a = 1" not in src:\n    logging.warning("patch failed")\n')
    assert found == {"a = 1": [(6, True, ())]}


def test_an_early_return_where_the_anchor_is_absent_guards_the_rewrite_after_it(tmp_path):
    body = """\
        if "a = 1" not in src:
            return src
        src = src.replace("a = 1", "a = 2").replace("b = 1", "b = 2")
    """
    assert anchor_sites(tmp_path, body) == {
        "a = 1": [(6, True, ()), (8, True, ())],
        "b = 1": [(8, True, ())],
    }


def test_an_anchor_whose_absence_raises_is_not_guarded(tmp_path):
    body = 'if "a = 1" not in src:\n    raise RuntimeError("drift")\nsrc = src.replace("b", "c")\n'
    assert anchor_sites(tmp_path, body) == {"a = 1": [(6, False, ())], "b": [(8, False, ())]}


def test_an_anchor_whose_absence_raises_beside_another_condition_is_not_guarded(tmp_path):
    # torchao: if is_olmoe and "gate_up_proj" not in source: raise RuntimeError(...)
    body = 'if olmoe and "a = 1" not in src:\n    raise RuntimeError("drift")\n'
    assert anchor_sites(tmp_path, body) == {"a = 1": [(6, False, ())]}
    body = 'if olmoe or "a = 1" not in src:\n    raise RuntimeError("drift")\n'
    assert anchor_sites(tmp_path, body) == {"a = 1": [(6, False, ())]}
    body = 'if not (olmoe or "a = 1" in src):\n    raise RuntimeError("drift")\n'
    assert anchor_sites(tmp_path, body) == {"a = 1": [(6, False, ())]}


def test_an_anchor_the_project_raises_or_asserts_without_is_a_check(tmp_path):
    checks = """\
        assert "a = 1" in src
        if "b = 1" not in src:
            raise RuntimeError("drift")
        src = src.replace("c", "d")
        if "e = 1" in src:
            src = src.replace("e = 1", "e = 2")
    """
    text = PATCH_HEAD + textwrap.indent(textwrap.dedent(checks), " " * 8)
    result = run(tmp_path, {"pkg/patch.py": text})
    raises = {r.anchor: r.sites[0].raises for r in result.references if r.kind is Kind.ANCHOR}
    assert raises == {"a = 1": True, "b = 1": True, "c": False, "e = 1": False}


def test_an_anchor_replaced_by_the_empty_string_is_a_deletion(tmp_path):
    edits = """\
        src = src.replace("a = 1", "")
        src = re.sub(r"b\\s*=\\s*1", "", src)
        counted = re.subn("c = 1", "", src)
        src = re.compile("d = 1").sub("", src)
        for pattern in ("e = 1", "f = 1"):
            src = re.sub(pattern, "", src)
        src = src.replace("g = 1", "g = 2")
        src = re.sub("h = 1", "\\n", src)
        src = re.sub("i = 1", "" if flag else "x", src)
        found = re.search("j = 1", src)
    """
    text = PATCH_HEAD + textwrap.indent(textwrap.dedent(edits), " " * 8)
    result = run(tmp_path, {"pkg/patch.py": text})
    deletes = {r.anchor: r.sites[0].deletes for r in result.references if r.kind is Kind.ANCHOR}
    assert deletes == {
        "a = 1": True, r"b\s*=\s*1": True, "c = 1": True, "d = 1": True, "e = 1": True,
        "f = 1": True, "g = 1": False, "h = 1": False, "i = 1": False, "j = 1": False,
    }  # fmt: skip


def test_a_test_on_something_other_than_the_source_guards_no_anchor(tmp_path):
    body = 'if name not in ("forward", "loss"):\n    return src\nsrc = src.replace("b", "c")\n'
    assert anchor_sites(tmp_path, body.replace("name", "src.__class__")) == {"b": [(8, False, ())]}


def test_an_anchor_spanning_text_an_earlier_replace_inserted_matches_only_the_rewrite(tmp_path):
    body = """\
        src = src.replace("run(self.row)", "run(unsloth_row)")
        if "x = 1\\nrun(unsloth_row)" in src:
            src = src.replace("x = 1\\nrun(unsloth_row)", "x = 2")
    """
    assert anchor_sites(tmp_path, body) == {"run(self.row)": [(6, False, ())]}


def test_a_subn_whose_count_decides_is_a_presence_test_and_a_find_index_is_not(tmp_path):
    body = """\
        where = src.find("b = 1")
        if where:
            return src
        src, n = re.subn(r"a = 1", "a = 2", src)
        if n == 0:
            return src
    """
    # find() is -1 (truthy) where the text is absent: no presence test
    assert anchor_sites(tmp_path, body) == {"b = 1": [(6, False, ())], "a = 1": [(9, True, ())]}


def test_the_fallback_where_a_findall_found_nothing_is_code_for_the_other_shape(tmp_path):
    body = 'found = re.findall(r"a = 1", src)\nif not found:\n    found = re.findall(r"a=1", src)\n'
    assert anchor_sites(tmp_path, body)["a=1"] == [(8, True, ("a = 1",))]


def test_in_the_body_of_an_or_of_spellings_applying_one_is_the_others_alternative(tmp_path):
    body = """\
        if "a = 1" in src or "a=1" in src:
            src = src.replace("a = 1", "a = 2").replace("a=1", "a=2")
    """
    assert anchor_sites(tmp_path, body) == {
        "a = 1": [(6, True, ("a=1",)), (7, True, ("a=1",))],
        "a=1": [(6, True, ("a = 1",)), (7, True, ("a = 1",))],
    }
