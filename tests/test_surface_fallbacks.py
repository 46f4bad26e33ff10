"""A failed upstream import breaks nothing where its ``except ImportError`` takes its
place: the names get other values (a None only where every read tests or catches it), or
the block leaves silently. Such a miss is recorded as handled, never held."""

from __future__ import annotations

import pytest
from surface_fakes import project_surface

from canary.surface.findings import findings
from canary.surface.model import Kind, Outcome, Reference, Resolved, Site, Target

FLASH = "transformers.models.llama.modeling_llama.LlamaFlashAttention2"
IMPORT = "from transformers.models.llama.modeling_llama import LlamaFlashAttention2"
READ = "def use():\n    return LlamaFlashAttention2\n"  # a read a None or unbound name breaks


def handled(tmp_path, source: str, *others: str, target: str = FLASH) -> str:
    """The ``handled`` of the one site of ``target`` imported in ``proj/m.py``; ``others``:
    the sources of further modules."""
    files = {"proj/__init__.py": "", "proj/m.py": source}
    files |= {f"proj/o{i}.py": text for i, text in enumerate(others)}
    refs = project_surface(tmp_path, files)
    (site,) = next(r for r in refs if r.target == target and r.kind is Kind.IMPORT).sites
    return site.handled


def fallback(handler: str, after: str = "") -> str:
    return f"try:\n    {IMPORT}\nexcept ImportError:\n    {handler}\n{after}"


@pytest.mark.parametrize(
    "handler",
    [
        "LlamaFlashAttention2 = LlamaAttention",  # unsloth's: another class
        # easydel's download_url: a definition of its own, built from what it imports
        "import os\n    from os import path as p\n    def LlamaFlashAttention2():\n"
        "        return os, p",
        "from transformers.models.llama.modeling_llama import LlamaAttention as "
        "LlamaFlashAttention2",  # the new place
        "class LlamaFlashAttention2:\n        def forward(self):\n            self.x = 1",
    ],
)
def test_a_handler_that_gives_the_name_another_value_handles_the_miss(tmp_path, handler):
    assert "another value" in handled(tmp_path, fallback(handler))


@pytest.mark.parametrize(
    ("inner", "handles"),
    [
        ("return {}", True),  # unsloth's VLMS: the second spelling, or leave
        ("LlamaFlashAttention2 = object", True),
        ("pass", False),  # the name may stay unbound
        # backpropagate's ORPOConfig: raises only where the second spelling fails too,
        # a miss of that import's own, found at its site
        ("raise RuntimeError('upgrade trl') from None", True),
        ("LlamaFlashAttention2 = object\n            raise", True),
    ],
)
def test_a_handler_that_tries_a_second_spelling_handles_the_miss(tmp_path, inner, handles):
    second = "from transformers.models.llama.modeling_llama import LlamaAttention as L"
    handler = f"try:\n            {second}lamaFlashAttention2\n        except Exception:\n"
    source = (
        f"def mapping():\n    try:\n        {IMPORT}\n    except Exception:\n        {handler}"
        f"            {inner}\n    return LlamaFlashAttention2\n"
    )
    assert bool(handled(tmp_path, source)) is handles


def test_a_second_try_that_raises_after_more_than_imports_does_not_handle_it(tmp_path):
    # its handler may run where the second import is there: the call failed
    handler = "try:\n        LlamaFlashAttention2 = load()\n    except Exception:\n        raise"
    assert handled(tmp_path, fallback(handler, READ)) == ""


def test_a_handler_that_leaves_silently_handles_the_miss(tmp_path):
    source = f"def patch():\n    try:\n        {IMPORT}\n    except ImportError:\n        return\n"
    assert "leaves the block silently" in handled(tmp_path, source)


@pytest.mark.parametrize(
    "handler",
    [
        "pass",  # the name stays unbound: a NameError one use away
        "raise RuntimeError('upgrade transformers')",  # a break, loudly
        "X = LlamaAttention",  # another name: LlamaFlashAttention2 stays unbound
        "LlamaFlashAttention2 = LlamaAttention\n    raise",
    ],
)
def test_a_handler_that_leaves_the_name_unbound_or_raises_does_not(tmp_path, handler):
    assert handled(tmp_path, fallback(handler, READ)) == ""


@pytest.mark.parametrize(
    ("before", "inside", "after", "why"),
    [
        # unsloth_zoo's HybridCache = t.Any before the try: read after it, as the Any
        ("LlamaFlashAttention2 = object\n", "", READ, "keeps the value line 1 gave it"),
        # unsloth's gemma3 logger: used and deleted in the body the failure leaves
        ("", "\n    LlamaFlashAttention2.forward = 1", "", "read only after the import, inside"),
    ],
)
def test_a_name_left_as_it_was_handles_the_miss_where_nothing_reads_it_unbound(
    tmp_path, before, inside, after, why
):
    source = f"{before}try:\n    {IMPORT}{inside}\nexcept Exception:\n    pass\n{after}"
    assert why in handled(tmp_path, source)


def test_an_accumulator_the_body_augments_keeps_what_it_held_before(tmp_path):
    # mlflow: types = (); try: from transformers import FlaxPreTrainedModel;
    # types += (FlaxPreTrainedModel,) except Exception: pass; ... return types
    grow = "\n    types += (LlamaFlashAttention2,)"
    body = f"    types = ()\n    try:\n        {IMPORT}{grow.replace(chr(10), chr(10) + '    ')}\n"
    source = f"def kinds():\n{body}    except Exception:\n        pass\n    return types\n"
    assert "read only after the import, inside the try body" in handled(tmp_path, source)
    # grown in an earlier try too: what it held before that one still stands
    earlier = "    try:\n        types += (1,)\n    except Exception:\n        pass\n"
    twice = source.replace("    try:\n", earlier + "    try:\n", 1)
    assert "read only after the import, inside the try body" in handled(tmp_path, twice)
    # a flag set in the body keeps its other meaning: not by this rule
    flag = source.replace("types += (LlamaFlashAttention2,)", "types = (LlamaFlashAttention2,)")
    assert handled(tmp_path, flag) == ""


@pytest.mark.parametrize(
    "source",
    [
        "LlamaFlashAttention2 = None\n",  # a None before: read unguarded below
        "if x:\n    LlamaFlashAttention2 = object\n",  # not bound on every path
    ],
)
def test_a_name_bound_before_only_sometimes_or_to_none_does_not(tmp_path, source):
    source += fallback("pass", READ)
    assert handled(tmp_path, source) == ""


def test_a_name_the_rest_of_the_body_binds_and_others_read_keeps_the_miss(tmp_path):
    # liger's shape: a class defined only where the import gave its base, imported elsewhere
    body = "class Mine(LlamaFlashAttention2): pass"
    source = f"try:\n    {IMPORT}\n    {body}\nexcept Exception:\n    pass\n"
    assert handled(tmp_path, source, "from proj.m import Mine\n") == ""


def test_an_import_the_try_does_not_catch_is_not_handled(tmp_path):
    source = f"try:\n    {IMPORT}\nexcept ValueError:\n    LlamaFlashAttention2 = None\n"
    assert handled(tmp_path, source) == ""


@pytest.mark.parametrize(
    "after",
    [
        # ms-swift's BoneModel: patched only under the test
        "def patch(f):\n    if LlamaFlashAttention2 is not None:\n"
        "        LlamaFlashAttention2.forward = f\n",
        # unsloth_zoo's ConstantLengthDataset: isinstance(x, None) raises TypeError, caught
        "def pick(d):\n    try:\n        return isinstance(d, LlamaFlashAttention2)\n"
        "    except Exception:\n        return False\n",
        "def on(f):\n    if f and LlamaFlashAttention2:\n"
        "        return LlamaFlashAttention2.forward\n",
        # autoawq's exaone: the names are only type hints, and None is one
        "def fuse(model: LlamaFlashAttention2) -> List[Tuple[str, LlamaFlashAttention2]]:\n"
        "    blocks: List[LlamaFlashAttention2] = []\n    return blocks\n",
    ],
)
def test_a_none_read_only_where_tested_or_caught_handles_the_miss(tmp_path, after):
    assert "None, read only where" in handled(
        tmp_path, fallback("LlamaFlashAttention2 = None", after)
    )


@pytest.mark.parametrize(
    ("after", "handles"),
    [
        # nemo: `if not FLASH or f is None: return ...`, then f(...)
        (
            "def use():\n    if LlamaFlashAttention2 is None:\n        return 0\n"
            "    return LlamaFlashAttention2()\n",
            True,
        ),
        (
            "def use():\n    x = LlamaFlashAttention2() if LlamaFlashAttention2 is not None"
            " else 0\n",
            True,
        ),
        ("def use():\n    assert LlamaFlashAttention2 is not None\n", False),
        ("def use():\n    if LlamaFlashAttention2 is None:\n        raise ValueError\n", False),
        (
            "def use():\n    if LlamaFlashAttention2 is None:\n        x = 1\n"
            "    return LlamaFlashAttention2()\n",
            False,
        ),  # the block goes on
    ],
)
def test_a_none_after_an_early_exit_or_in_a_conditional_is_tested(tmp_path, after, handles):
    assert bool(handled(tmp_path, fallback("LlamaFlashAttention2 = None", after))) is handles


@pytest.mark.parametrize(
    ("after", "others"),
    [
        ("def make():\n    return LlamaFlashAttention2()\n", ()),  # None(): TypeError
        ("def f(m: LlamaFlashAttention2 | int):\n    pass\n", ()),  # None | int: TypeError
        # liger's output classes: defined only when the import gave one, imported elsewhere
        (
            "if LlamaFlashAttention2 is not None:\n    class Mine(LlamaFlashAttention2): pass\n",
            (),
        ),
        # another module may import the None and read it unguarded
        ("", ("from proj.m import LlamaFlashAttention2\nLlamaFlashAttention2.forward\n",)),
    ],
)
def test_a_none_that_may_be_read_unguarded_does_not(tmp_path, after, others):
    assert handled(tmp_path, fallback("LlamaFlashAttention2 = None", after), *others) == ""


@pytest.mark.parametrize(
    ("beside", "fallback"),
    [
        # unsloth's loader.py: the except branch runs only where AutoModelForImageTextToText fails
        ("AutoModelForVision2Seq = AutoModelForImageTextToText", True),
        # xinference's sensenova compat: a wrapper defined beside the import runs nothing
        ("def AutoModelForVision2Seq(x: Any = None) -> Dict[str, Any]:\n        return x", True),
        ("@cache\n    def AutoModelForVision2Seq(): ...", False),  # a decorator runs
        ("def AutoModelForVision2Seq(x=load()): ...", False),  # a default runs
    ],
)
def test_a_try_that_also_renames_what_it_imported_still_has_a_fallback(tmp_path, beside, fallback):
    source = f"""\
try:
    from transformers import AutoModelForImageTextToText
    {beside}
except:
    from transformers import AutoModelForVision2Seq
"""
    refs = project_surface(tmp_path, {"proj/__init__.py": "", "proj/m.py": source})
    (site,) = next(r for r in refs if r.target == "transformers.AutoModelForVision2Seq").sites
    assert bool(site.fallback_of) is fallback


@pytest.mark.parametrize(
    ("returned", "handler", "fallback"),
    [
        # soup-cli: the new home first; what follows the try is the old one
        ("AutoModelForImageTextToText, True", "pass", True),
        ("AutoModelForImageTextToText", "log.warning('old transformers')", True),
        ("build(AutoModelForImageTextToText)", "pass", False),  # the call may raise too
        ("AutoModelForImageTextToText", "return None", False),  # nothing follows there
    ],
)
def test_what_follows_a_try_that_returns_what_it_imported_is_its_fallback(
    tmp_path, returned, handler, fallback
):
    source = f"""def auto_class():
    try:
        from transformers import AutoModelForImageTextToText
        return {returned}
    except ImportError:
        {handler}
    from transformers import AutoModelForVision2Seq
    return AutoModelForVision2Seq
"""
    refs = project_surface(tmp_path, {"proj/__init__.py": "", "proj/m.py": source})
    (site,) = next(r for r in refs if r.target == "transformers.AutoModelForVision2Seq").sites
    assert site.fallback_of == (("transformers.AutoModelForImageTextToText",) if fallback else ())


@pytest.mark.parametrize(
    ("returned", "fallback"),
    [
        # geoai-vlm's _auto_vlm_class: the new name returned, the old one in the handler
        ("AutoModelForImageTextToText", True),
        ("AutoModelForImageTextToText, None", True),
        ("AutoModelForImageTextToText.from_config(c)", False),  # the call may raise too
    ],
)
def test_the_handler_of_a_try_that_returns_what_it_imported_is_its_fallback(
    tmp_path, returned, fallback
):
    source = f"""def auto_class(c):
    try:
        from transformers import AutoModelForImageTextToText
        return {returned}
    except ImportError:
        from transformers import AutoModelForVision2Seq
        return AutoModelForVision2Seq
"""
    refs = project_surface(tmp_path, {"proj/__init__.py": "", "proj/m.py": source})
    (site,) = next(r for r in refs if r.target == "transformers.AutoModelForVision2Seq").sites
    assert site.fallback_of == (("transformers.AutoModelForImageTextToText",) if fallback else ())


@pytest.mark.parametrize(
    ("body", "handler", "fallback"),
    [
        # sinq's auto class: the new name read first, the old one where it is missing
        ("cls = transformers.AutoModelForImageTextToText", "AttributeError", True),
        ("cls = transformers.AutoModelForImageTextToText", "Exception", True),
        ("cls = transformers.AutoModelForImageTextToText", "KeyError", False),
        # a call may raise AttributeError of its own: the handler may run anywhere
        ("cls = transformers.AutoModelForImageTextToText.from_config(c)", "AttributeError", False),
    ],
)
def test_the_handler_of_an_upstream_read_runs_only_where_the_read_fails(
    tmp_path, body, handler, fallback
):
    source = f"""import transformers
def auto_class(c):
    try:
        {body}
    except {handler}:
        cls = transformers.AutoModelForVision2Seq
    return cls
"""
    refs = project_surface(tmp_path, {"proj/__init__.py": "", "proj/m.py": source})
    (site,) = next(r for r in refs if r.target == "transformers.AutoModelForVision2Seq").sites
    assert site.fallback_of == (("transformers.AutoModelForImageTextToText",) if fallback else ())


RELEASES = ("4.47.0", "4.48.0", "5.0.0")
PROJECT = Target("proj", "1.0", {"transformers": ">=4.47"})


def miss(*sites: Site) -> Resolved:
    """LlamaFlashAttention2 removed in 4.48.0, imported at ``sites``."""
    outcomes = dict(zip(RELEASES, (Outcome.OK, Outcome.MISSING, Outcome.MISSING), strict=True))
    return Resolved(Reference("transformers", FLASH, Kind.IMPORT, sites), outcomes, {})


def test_a_removed_miss_whose_every_site_is_handled_is_recorded_never_held():
    (finding,) = findings(
        [miss(Site("proj/m.py", 2, True, handled="gives it another value"))], PROJECT
    )
    assert (finding.new, finding.fails) == ((), False)
    assert finding.handled == dict.fromkeys(RELEASES[1:], "proj/m.py:2: gives it another value")
    assert finding.to_json()["handled"] == finding.handled


def test_one_site_that_is_not_handled_holds_the_miss():
    sites = Site("proj/m.py", 2, True, handled="leaves"), Site("proj/n.py", 5, True)
    (finding,) = findings([miss(*sites)], PROJECT)
    assert (finding.new, finding.handled) == (RELEASES[1:], {})


def test_handled_survives_the_json_contract():
    site = Site("proj/m.py", 2, True, handled="leaves")
    assert Site.from_json(site.to_json()) == site
    assert "handled" not in Site("proj/m.py", 2).to_json()


def test_what_follows_an_import_in_a_try_body_requires_it_where_the_handler_catches(tmp_path):
    # unsloth_zoo's Qwen2_5_VLImageProcessor.max_pixels: patched only where it imported
    patch = "\n    LlamaFlashAttention2.forward = f\nexcept {}:\n    pass\n"
    for caught, required in (("ImportError", (FLASH,)), ("ValueError", ())):
        refs = project_surface(
            tmp_path, {"proj/m.py": f"def f(): pass\ntry:\n    {IMPORT}{patch.format(caught)}"}
        )
        (site,) = next(r for r in refs if r.kind is Kind.PATCH).sites
        assert site.requires == required


@pytest.mark.parametrize(
    "handler",
    [
        # unsloth's glm4_moe_lite: dummy classes, and a flag read later to raise
        "HAS_LLAMA = False\n    class LlamaFlashAttention2: pass",
        "LlamaFlashAttention2 = LlamaAttention\n    FLAGS['llama'] = False",
    ],
)
def test_a_handler_that_signals_the_failure_does_not_handle_it(tmp_path, handler):
    assert handled(tmp_path, fallback(handler, READ)) == ""


def test_a_handler_that_gives_a_name_of_the_body_another_object_takes_its_place(tmp_path):
    # unsloth_zoo's LossKwargs: KwargsForCausalLM, a class of the body, or the new TypedDict
    body = "class Kwargs(LlamaFlashAttention2): ..."
    source = f"LlamaFlashAttention2 = object\ntry:\n    {IMPORT}\n    {body}\n"
    replaced = source + "except ImportError:\n    Kwargs = dict\n" + READ
    assert "keeps the value line 1 gave it" in handled(tmp_path, replaced)
    flagged = source + "except ImportError:\n    Kwargs = False\n" + READ
    assert handled(tmp_path, flagged) == ""  # a constant is a flag a later test reads
    # None: judged by its reads, as the import's own None is (nemo's _flash_attention_forward)
    nothing = source + "except ImportError:\n    Kwargs = None\n" + READ
    assert "keeps the value line 1 gave it" in handled(tmp_path, nothing)
    raising = nothing + "def check():\n    if Kwargs is None:\n        raise ImportError('x')\n"
    assert handled(tmp_path, raising) == ""


FLAGGED = f"HAS = False\ntry:\n    {IMPORT}\n    HAS = True\nexcept Exception:\n    pass\n"


@pytest.mark.parametrize(
    "reader",
    [
        "def use():\n    return HAS\n",  # passed on: a raise may follow anywhere
        "if not HAS:\n    raise ImportError('needs llama')\n",  # unsloth's HAS_GLM4_MOE
        "assert HAS\n",
        "def use(x):\n    if HAS and x:\n        return 1\n    else:\n        raise ValueError\n",
    ],
)
def test_a_flag_a_reader_may_raise_on_keeps_the_miss(tmp_path, reader):
    assert handled(tmp_path, FLAGGED + reader) == ""


def test_a_flag_no_reader_raises_on_handles_the_miss(tmp_path):
    # unsloth_zoo's HybridCache: `elif HAS_HYBRID_CACHE and isinstance(...)`, else goes on
    reader = "def use(x):\n    if HAS and x:\n        return 1\n    return 2\n"
    assert "its ImportError is handled" in handled(tmp_path, FLAGGED + reader)


def test_a_flag_another_module_raises_on_keeps_the_miss(tmp_path):
    reader = "def use(x):\n    return 1 if HAS else 2\n"
    elsewhere = "from proj.m import HAS\nif not HAS:\n    raise ImportError\n"
    assert "its ImportError is handled" in handled(tmp_path, FLAGGED + reader)
    assert handled(tmp_path, FLAGGED + reader, elsewhere) == ""


def test_what_follows_a_try_that_leaves_on_failure_requires_its_upstream_imports(tmp_path):
    # unsloth's import_fixes: torch beside masking_utils, and an except that returns
    source = """\
        def fix():
            try:
                import torch
                from transformers import masking_utils
            except Exception:
                return
            return masking_utils.sdpa_mask
    """
    refs = project_surface(tmp_path, {"proj/m.py": source})
    (site,) = next(r for r in refs if r.target == "transformers.masking_utils.sdpa_mask").sites
    assert site.requires == ("transformers.masking_utils",)


def test_a_handler_that_goes_on_after_another_error_requires_nothing(tmp_path):
    # a ValueError before the import reaches what follows without it
    source = """\
        def fix(x):
            try:
                int(x)
                from transformers import masking_utils
            except ValueError:
                pass
            except ImportError:
                return
            return masking_utils.sdpa_mask
    """
    refs = project_surface(tmp_path, {"proj/m.py": source})
    (site,) = next(r for r in refs if r.target == "transformers.masking_utils.sdpa_mask").sites
    assert site.requires == ()


@pytest.mark.parametrize(
    ("reads", "handled_there"),
    [
        # outlines' FlaxPreTrainedModel: set to None in the function, read under a test
        (
            "    if LlamaFlashAttention2 is not None and isinstance(m, LlamaFlashAttention2):\n"
            "        return 1\n",
            True,
        ),
        ("    return LlamaFlashAttention2.forward\n", False),  # read unguarded
        ("", False),  # declared global below: read wherever the module is
    ],
)
def test_a_none_fallback_inside_a_function_is_judged_by_its_reads_there(
    tmp_path, reads, handled_there
):
    source = (
        "def load(m):\n" + ("" if reads else "    global LlamaFlashAttention2\n") + "    try:\n"
        f"        from {FLASH.rpartition('.')[0]} import LlamaFlashAttention2\n"
        "    except ImportError:\n"
        "        LlamaFlashAttention2 = None\n" + reads
    )
    assert bool(handled(tmp_path, source)) is handled_there


def test_a_name_outside_the_try_body_only_in_a_docstring_is_read_nowhere_there(tmp_path):
    # nvidia-modelopt's _parse_shard_size: its docstring names the helper it imports
    source = (
        "def parse(size):\n"
        "    '''Mirrors LlamaFlashAttention2, removed later.'''\n"
        "    try:\n"
        f"        {IMPORT}\n"
        "        return LlamaFlashAttention2(size)\n"
        "    except ImportError:\n"
        "        pass\n"
        "    return size\n"
    )
    assert "inside the try body it leaves" in handled(tmp_path, source)


@pytest.mark.parametrize(
    ("handler", "after", "handled_there"),
    [
        # megatron-bridge's _init_embed_audio: the handler builds another embedder in its place
        ("dim = c.dim; self.embed = Simple(dim)", "", True),
        ("self.embed = Simple(c)", "", True),
        ("self.embed = None", "", False),  # a constant: a flag read later
        ("self.other = Simple(c)", "", False),  # another attribute: a signal
        ("dim = c.dim; self.embed = Simple(dim)", "self.dim = dim", False),  # read after it
    ],
)
def test_a_handler_that_sets_the_attribute_the_try_body_sets_takes_its_place(
    tmp_path, handler, after, handled_there
):
    source = (
        "class Model:\n"
        "    def init(self, c):\n"
        "        try:\n"
        f"            {IMPORT}\n"
        "            self.embed = LlamaFlashAttention2(c)\n"
        "        except (ImportError, AttributeError):\n"
        f"            {handler}\n"
        f"        {after}\n"
    )
    assert bool(handled(tmp_path, source)) is handled_there


def reraised(tmp_path, source: str) -> list[tuple[bool, bool]]:
    """(guarded, raises) of each site of FLASH's import in ``source``."""
    refs = project_surface(tmp_path, {"proj/__init__.py": "", "proj/m.py": source})
    found = next(r for r in refs if r.target == FLASH and r.kind is Kind.IMPORT)
    return [(site.guarded, site.raises) for site in found.sites]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        # lmfast's alignment: a message for the user, and the import still breaks the call
        (fallback("raise ImportError('install transformers<4.48')"), (True, True)),
        (fallback("LlamaFlashAttention2 = None"), (True, False)),  # a fallback
        # an outer guard that goes on takes the raised error: the failure stays silent
        (
            "try:\n    "
            + fallback("raise").replace("\n", "\n    ")
            + "\nexcept Exception:\n    pass\n",
            (True, False),
        ),
    ],
)
def test_an_import_whose_every_guard_raises_again_still_breaks(tmp_path, source, expected):
    assert reraised(tmp_path, source) == [expected]
