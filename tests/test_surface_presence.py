"""What a presence test found there is required by what follows it, in the spellings projects
use: an own namespace's ``get``/``in``, ``isinstance``, a name held by a helper's parameter."""

from __future__ import annotations

import pytest
from surface_fakes import project_surface

from canary.surface.model import Kind

MODEL = "transformers.modeling_utils.PreTrainedModel"
TARGET = f"{MODEL}._remap"
PATCH = "PreTrainedModel._remap = 1\n"


def requires(tmp_path, body: str, kind: Kind = Kind.PATCH, target: str = TARGET) -> set[tuple]:
    """What each site of ``target`` requires, ``body`` the module (``PreTrainedModel``
    imported)."""
    head = "from transformers.modeling_utils import PreTrainedModel\n"
    refs = project_surface(tmp_path, {"proj/__init__.py": "", "proj/m.py": head + body})
    found = next(r for r in refs if r.kind is kind and r.target == target)
    return {site.requires for site in found.sites}


@pytest.mark.parametrize(
    "test",
    [
        "PreTrainedModel.__dict__.get('_remap') is None",
        "vars(PreTrainedModel).get('_remap') is None",
        "'_remap' not in PreTrainedModel.__dict__",
        "not hasattr(PreTrainedModel, NAME)",  # a module constant names it
        "not isinstance(getattr(PreTrainedModel, '_remap', None), type)",
        "not isinstance(PreTrainedModel.__dict__.get('_remap'), property)",
    ],
)
def test_an_early_return_on_an_absent_attribute_requires_it(tmp_path, test):
    body = f"NAME = '_remap'\ndef patch():\n    if {test}:\n        return\n    {PATCH}"
    assert requires(tmp_path, body) == {(TARGET,)}


def test_an_instance_test_of_a_lookup_that_may_find_its_default_requires_nothing(tmp_path):
    test = "not isinstance(getattr(PreTrainedModel, '_remap', ''), str)"  # '' is a str
    body = f"def patch():\n    if {test}:\n        return\n    {PATCH}"
    assert requires(tmp_path, body) == {()}


def lacks(tmp_path, body: str, target: str) -> set[tuple]:
    head = "from transformers.modeling_utils import PreTrainedModel\n"
    refs = project_surface(tmp_path, {"proj/__init__.py": "", "proj/m.py": head + body})
    return {site.lacks for r in refs if r.target == target for site in r.sites}


@pytest.mark.parametrize(
    "test",
    [
        "hasattr(PreTrainedModel, '_remap')",  # verl's npu_patch: the renamed class otherwise
        "getattr(PreTrainedModel, '_remap', None) is not None",
    ],
)
def test_the_other_branch_of_a_presence_test_runs_only_where_it_is_absent(tmp_path, test):
    other = "    else:\n        PreTrainedModel._old = 1\n"
    body = f"def patch():\n    if {test}:\n        {PATCH}{other}"
    assert lacks(tmp_path, body, f"{MODEL}._old") == {(TARGET,)}
    assert lacks(tmp_path, body, TARGET) == {()}


# a try that binds one upstream object and its ImportError handler None: `is None` is its
# absence (unsloth_zoo's block_swap: set_param_for_module's else patches the 4.x loader)
LOOKED_UP = """\
    try:
        core = importlib.import_module("transformers.modeling_utils")
        original = getattr(core, "_remap", None)
    except ImportError:
        core, original = None, None
"""
IMPORTED = """\
    try:
        from transformers.modeling_utils import _remap as original
    except ImportError:
        original = None
"""
OLD = "PreTrainedModel._old = 1"


def none_fallback(tmp_path, tried: str, *, module_level: bool = False, after: str = "") -> set:
    """What ``PreTrainedModel._old = 1`` lacks, in the ``else`` of ``original is not None``
    after ``tried`` (a function's try, or the module's)."""
    test = f"    if original is not None:\n        pass\n    else:\n        {OLD}\n{after}"
    if module_level:
        tried = "\n".join(line[4:] for line in tried.splitlines()) + "\n"
        body = f"import importlib\n{tried}def patch():\n{test}"
    else:
        body = f"import importlib\ndef patch():\n{tried}{test}"
    return lacks(tmp_path, body, f"{MODEL}._old")


@pytest.mark.parametrize("tried", [LOOKED_UP, IMPORTED])
@pytest.mark.parametrize("module_level", [False, True])
def test_a_name_a_handler_sets_to_none_is_none_where_its_object_is_absent(
    tmp_path, tried, module_level
):
    absent = "transformers.modeling_utils._remap"
    assert none_fallback(tmp_path, tried, module_level=module_level) == {(absent,)}


@pytest.mark.parametrize(
    "tried",
    [
        # another import may be what failed: None says nothing of _remap
        IMPORTED.replace("    try:\n", "    try:\n        import torchvision\n"),
        IMPORTED.replace("original = None", "original = len"),  # a fallback of its own
        IMPORTED.replace("ImportError", "ValueError"),  # an ImportError leaves it unbound
    ],
)
def test_a_none_that_may_come_from_elsewhere_is_no_absence(tmp_path, tried):
    assert none_fallback(tmp_path, tried) == {()}


def test_a_module_name_a_function_may_set_to_none_is_no_absence(tmp_path):
    resets = "def reset():\n    global original\n    original = None\n"
    assert none_fallback(tmp_path, IMPORTED, module_level=True, after=resets) == {()}


def test_a_test_of_a_name_the_project_puts_back_is_resolved_for_what_it_gates(tmp_path):
    # helical: `if not hasattr(g, "Greedy"): g.Greedy = g.Generate; g.Sample = g.Generate`
    body = (
        "def patch():\n    if not hasattr(PreTrainedModel, 'Greedy'):\n"
        "        PreTrainedModel.Greedy = PreTrainedModel.Generate\n"
        "        PreTrainedModel.Sample = PreTrainedModel.Generate\n"
    )
    head = "from transformers.modeling_utils import PreTrainedModel\n"
    refs = project_surface(tmp_path, {"proj/__init__.py": "", "proj/m.py": head + body})
    kinds = {(r.target.rpartition(".")[2], r.kind) for r in refs}
    # the put-back name is the project's own as a binding, but its test is resolved
    assert ("Greedy", Kind.ATTRIBUTE) in kinds
    assert ("Greedy", Kind.PATCH) not in kinds
    (sample,) = [r for r in refs if r.target.endswith(".Sample")]
    assert sample.sites[0].lacks == (f"{MODEL}.Greedy",)


def test_an_original_kept_from_the_own_namespace_is_a_presence_test(tmp_path):
    body = (
        "def patch():\n"
        "    original = PreTrainedModel.__dict__.get('_remap')\n"
        "    if original is None:\n"
        "        return\n"
        "    PreTrainedModel._remap = 1\n"
    )
    assert requires(tmp_path, body) == {(TARGET,)}


def test_isinstance_says_the_name_is_not_none(tmp_path):
    body = (
        "def patch():\n"
        "    prop = PreTrainedModel.__dict__.get('_remap')\n"
        "    if not isinstance(prop, property) or prop.fget is None:\n"
        "        return\n"
        "    f = prop.fget\n"
    )
    assert requires(tmp_path, body, Kind.ATTRIBUTE, f"{TARGET}.fget") == {(TARGET,)}


def test_isinstance_of_none_s_type_says_nothing(tmp_path):
    body = (
        "def patch():\n"
        "    prop = PreTrainedModel.__dict__.get('_remap')\n"
        "    if not isinstance(prop, type(None)):\n"
        "        f = prop.fget\n"
    )
    assert requires(tmp_path, body, Kind.ATTRIBUTE, f"{TARGET}.fget") == {()}


def test_a_helper_testing_its_parameters_guards_the_patch_it_makes(tmp_path):
    body = (
        "def patch_function(target, name, new):\n"
        "    if not hasattr(target, name):\n"
        "        return False\n"
        "    setattr(target, name, new)\n"
        "    return True\n"
        "def install():\n"
        "    patch_function(PreTrainedModel, '_remap', len)\n"
    )
    assert (TARGET,) in requires(tmp_path, body)


def test_a_get_on_anything_but_a_namespace_is_no_presence_test(tmp_path):
    body = f"def patch(d):\n    if d.get('_remap') is None:\n        return\n    {PATCH}"
    assert requires(tmp_path, body) == {()}


MOE = "transformers.integrations.moe.ALL_EXPERTS_FUNCTIONS"
FLAGGED = """\
try:
    from transformers.integrations.moe import ALL_EXPERTS_FUNCTIONS
    HAS_EXPERTS = True
except ImportError:
    HAS_EXPERTS = {fallback}
    ALL_EXPERTS_FUNCTIONS = None

def register():
    if not HAS_EXPERTS:
        return False
    ALL_EXPERTS_FUNCTIONS._global_mapping["linear_loop"] = None
"""


@pytest.mark.parametrize(("fallback", "required"), [("False", (MOE,)), ("None", ())])
def test_a_flag_set_after_an_import_and_cleared_by_its_handler_is_a_presence_test(
    tmp_path, fallback, required
):
    # auto-round: HAS_EXPERTS_INTERFACE; a handler that sets anything else is no such flag
    body = FLAGGED.format(fallback=fallback)
    got = requires(tmp_path, body, Kind.PATCH, f"{MOE}._global_mapping")
    assert got == {required}


LEGACY = "from transformers.integrations.tensor_parallel import add_hooks"


@pytest.mark.parametrize(
    "branch",
    [f"if not is_dtensor_tp:\n    {LEGACY}", f"if is_dtensor_tp:\n    pass\nelse:\n    {LEGACY}"],
)
def test_the_false_side_of_such_a_flag_runs_where_its_import_failed(tmp_path, branch):
    # peft: `if not is_transformers_dtensor_tp:` imports the legacy tensor-parallel hooks
    flag = (
        "try:\n    from transformers.distributed.tensor_parallel import apply\n"
        "    is_dtensor_tp = True\nexcept ImportError:\n    is_dtensor_tp = False\n"
    )
    refs = project_surface(tmp_path, {"proj/__init__.py": "", "proj/m.py": flag + branch})
    (found,) = [r for r in refs if r.target.endswith("add_hooks")]
    dtensor = "transformers.distributed.tensor_parallel.apply"
    assert [site.fallback_of for site in found.sites] == [(dtensor,)]


EXPERTS = "transformers.models.qwen3_moe.modeling_qwen3_moe.Qwen3MoeExperts"
READ_FLAG = """\
import transformers.models.qwen3_moe.modeling_qwen3_moe as qm
def patch():
    old = True
    try:
        {attempt}
        old = False
    except {caught}:
        old = {handler}
    if old:
        qm.Qwen3MoeSparseMoeBlock.forward = None
    else:
        qm.Qwen3MoeExperts.forward = None
"""


@pytest.mark.parametrize(
    ("attempt", "caught", "handler", "required"),
    [
        # unsloth_zoo's qwen3_moe: `New transformers has this`, so old = False after it
        ("qm.Qwen3MoeExperts", "Exception", "True", (EXPERTS,)),
        ("cls = qm.Qwen3MoeExperts", "AttributeError", "True", (EXPERTS,)),
        ("from transformers.models.qwen3_moe.modeling_qwen3_moe import Qwen3MoeExperts",
         "ImportError", "True", (EXPERTS,)),
        ("qm.Qwen3MoeExperts", "ImportError", "True", ()),  # a read raises no ImportError
        ("qm.Qwen3MoeExperts", "Exception", "False", ()),  # no flag: the same value either way
        ("qm.Qwen3MoeExperts()", "Exception", "True", ()),  # a call may fail otherwise
    ],
)  # fmt: skip
def test_a_flag_cleared_after_a_read_and_set_by_its_handler_is_a_presence_test(
    tmp_path, attempt, caught, handler, required
):
    body = READ_FLAG.format(attempt=attempt, caught=caught, handler=handler)
    got = requires(tmp_path, body, Kind.PATCH, f"{EXPERTS}.forward")
    assert got == {required}
    # its other side runs where the read failed, as the handler does
    refs = project_surface(tmp_path, {"proj/__init__.py": "", "proj/m.py": body})
    (old,) = [r for r in refs if r.target.endswith("Qwen3MoeSparseMoeBlock.forward")]
    assert [site.fallback_of for site in old.sites] == [required]


REGISTRY = """\
classes = {}
try:
    from transformers.models.qwen3_5.modeling_qwen3_5 import Qwen3_5DecoderLayer
    HAS_QWEN3_5 = True
    classes["qwen3_5"] = Qwen3_5DecoderLayer
except ImportError:
    HAS_QWEN3_5 = False
"""
LAYER = "transformers.models.qwen3_5.modeling_qwen3_5.Qwen3_5DecoderLayer"
NORM = "from transformers.models.qwen3_5.modeling_qwen3_5 import Qwen3_5RMSNorm"


@pytest.mark.parametrize(
    ("registry", "user", "required"),
    [
        # speculators: `if "qwen3_5_text" in base_components.model_classes:`, another module
        (REGISTRY, f"from proj import r\nif 'qwen3_5' in r.classes:\n    {NORM}\n", (LAYER,)),
        (REGISTRY, f"from proj.r import classes\nif 'qwen3_5' in classes:\n    {NORM}\n", (LAYER,)),
        (
            REGISTRY,
            f"from proj import r\ndef f():\n    if 'qwen3_5' not in r.classes:\n"
            f"        return\n    {NORM}\n",
            (LAYER,),
        ),
        (REGISTRY, f"from proj import r\nif r.HAS_QWEN3_5:\n    {NORM}\n", (LAYER,)),  # a flag
        # a key something else sets too, or another key: no test of the import
        (
            REGISTRY + "classes['qwen3_5'] = None\n",
            f"from proj import r\nif 'qwen3_5' in r.classes:\n    {NORM}\n",
            (),
        ),
        (
            REGISTRY + "classes.update(x=1)\n",
            f"from proj import r\nif 'qwen3_5' in r.classes:\n    {NORM}\n",
            (),
        ),
        (REGISTRY, f"from proj import r\nif 'llama' in r.classes:\n    {NORM}\n", ()),
        (  # another module sets the key through the module
            REGISTRY,
            f"from proj import r\nr.classes['qwen3_5'] = 2\n"
            f"if 'qwen3_5' in r.classes:\n    {NORM}\n",
            (),
        ),
    ],
)
def test_a_key_a_try_sets_after_its_imports_is_a_presence_test_of_them(
    tmp_path, registry, user, required
):
    files = {"proj/__init__.py": "", "proj/r.py": registry, "proj/u.py": user}
    # speculators: another registry of a longer name, set under the same key elsewhere
    files["proj/mtp.py"] = "from proj import r\nmtp_classes = {}\nmtp_classes['qwen3_5'] = 1\n"
    refs = project_surface(tmp_path, files)
    found = next(r for r in refs if r.target.endswith("Qwen3_5RMSNorm"))
    assert [site.requires for site in found.sites] == [required]


MAPPING = "transformers.conversion_mapping.get_checkpoint_conversion_mapping"


@pytest.mark.parametrize(
    ("test", "required"),
    [
        ('cfg.get("model_type") == "deepseek_v4"', "transformers.models.deepseek_v4"),
        (
            'getattr(cfg, "model_type", None) in ("qwen3_5", "qwen3_5_moe") and fa2',
            "transformers.models.qwen3_5|transformers.models.qwen3_5_moe",
        ),
        ("cfg.model_type in TYPES", "transformers.models.llama4"),  # a constant names it
        # ms-swift: _VLLM_CHECKPOINT_STYLE_PACKED_MOE_MODEL_TYPES = frozenset({'nemotron_h'})
        ("cfg.model_type in FROZEN", "transformers.models.nemotron_h"),
        ("cfg.model_type in LISTED", "transformers.models.qwen3_5|transformers.models.qwen3_vl"),
        ("cfg.model_type in CHARS", None),  # set("abc"): the letters, no model type
        ('field(cfg, "model_type") == "gpt_oss"', "transformers.models.gpt_oss"),  # a helper
        ('"gemma" in cfg.model_type', None),  # a substring: no type
        ('cfg.model_type != "llama4"', None),  # every type but one
    ],
)
def test_a_branch_only_a_model_type_reaches_requires_one_of_its_packages(tmp_path, test, required):
    # amd-quark: if hf_model_config.get("model_type") == "deepseek_v4": ...
    body = f"""\
        TYPES = ("llama4",)
        FROZEN = frozenset({{"nemotron_h"}})
        LISTED = tuple(["qwen3_vl", "qwen3_5"])
        CHARS = set("abc")
        def load(cfg, fa2, field):
            if {test}:
                from transformers.conversion_mapping import get_checkpoint_conversion_mapping
        """
    refs = project_surface(tmp_path, {"proj/__init__.py": "", "proj/m.py": body})
    (site,) = next(r for r in refs if r.target == MAPPING).sites
    assert site.requires == ((required,) if required else ())


def test_after_an_early_return_for_other_model_types_the_rest_requires_the_package(tmp_path):
    body = """\
        def load(config):
            if config.model_type not in ["qwen3_5", "qwen3_5_moe"]:
                return
            from transformers.conversion_mapping import get_checkpoint_conversion_mapping
        """
    refs = project_surface(tmp_path, {"proj/__init__.py": "", "proj/m.py": body})
    (site,) = next(r for r in refs if r.target == MAPPING).sites
    assert site.requires == ("transformers.models.qwen3_5|transformers.models.qwen3_5_moe",)


SHIM = """\
def install():
    import transformers.integrations.tensor_parallel as compat
    if getattr(compat, "ReplicateParallel", None) is not None:
        return
    compat.ReplicateParallel = object
def use():
    install()
    from transformers.integrations.tensor_parallel import {name}
"""


@pytest.mark.parametrize(("name", "upstream"), [("ReplicateParallel", False), ("Other", True)])
def test_an_import_of_a_shim_the_project_sets_where_upstream_lacks_it_is_its_own(
    tmp_path, name, upstream
):
    # axolotl's tp.py: accelerate's ReplicateParallel, set only where transformers lacks it
    refs = project_surface(tmp_path, {"proj/__init__.py": "", "proj/m.py": SHIM.format(name=name)})
    imports = {r.target.rpartition(".")[2] for r in refs if r.kind is Kind.IMPORT}
    assert (name in imports) is upstream


@pytest.mark.parametrize(
    ("test", "patched"),
    [
        ("existing is not None and len(existing) > 0", False),
        ("len(existing) > 0 and existing is not None", False),  # the parts swapped
        ("not (existing is None or len(existing) == 0)", False),  # De Morgan's
        ("existing is None and len(NEW) > 0", True),  # goes on where it is there: a patch
    ],
)
def test_a_binding_past_a_test_its_absence_fails_puts_the_name_back(tmp_path, test, patched):
    # unsloth_zoo's vision-mapping alias, and rewrites of its test that change nothing
    body = (
        "NEW = {}\n"
        "def alias():\n"
        "    existing = getattr(PreTrainedModel, 'OLD', None)\n"
        f"    if {test}:\n"
        "        return\n"
        "    PreTrainedModel.OLD = NEW\n"
    )
    head = "from transformers.modeling_utils import PreTrainedModel\n"
    refs = project_surface(tmp_path, {"proj/__init__.py": "", "proj/m.py": head + body})
    found = {r.target for r in refs if r.kind is Kind.PATCH}
    assert (f"{MODEL}.OLD" in found) is patched
