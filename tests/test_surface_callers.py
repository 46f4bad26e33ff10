"""A site inside a private module-level function runs only after a place that names the
function ran: it takes those places' conditions, on small project trees written here."""

from __future__ import annotations

import pytest
from surface_fakes import project_surface

from canary.surface.model import Site

TARGET = "transformers.core_model_loading.WeightConverter"
HELPER = "def _convert():\n    from transformers.core_model_loading import WeightConverter\n"
V5 = (
    "import transformers\n"
    "from packaging import version\n"
    "def install():\n"
    "    if version.parse(transformers.__version__) >= version.parse('5.0.0'):\n"
    "        _convert()\n"
)
PRESENT = (
    "from transformers import conversion_mapping\n"
    "def install():\n"
    "    if not hasattr(conversion_mapping, 'register'):\n"
    "        return\n"
    "    _convert()\n"
)
WINDOW = (("transformers", ">=5.0.0"),)


def sites(tmp_path, *modules: str, extra: dict[str, str] | None = None) -> list[Site]:
    """The sites of TARGET, with ``modules`` joined into ``proj/m.py``."""
    files = {"proj/__init__.py": "", "proj/m.py": "\n".join(modules), **(extra or {})}
    refs = project_surface(tmp_path, files)
    return sorted(next(r for r in refs if r.target == TARGET and r.kind.value == "import").sites)


def test_a_helper_called_only_under_a_version_test_takes_its_window(tmp_path):
    assert [s.versions for s in sites(tmp_path, HELPER, V5)] == [WINDOW]


def test_a_helper_called_only_past_a_presence_test_requires_what_it_tested(tmp_path):
    (site,) = sites(tmp_path, HELPER, PRESENT)
    assert "transformers.conversion_mapping.register" in site.requires


def test_a_helper_called_only_where_a_presence_test_failed_lacks_what_it_tested(tmp_path):
    absent = PRESENT.replace("if not hasattr", "if hasattr")
    (site,) = sites(tmp_path, HELPER, absent)
    assert site.lacks == ("transformers.conversion_mapping.register",)


def test_a_helper_of_a_helper_takes_the_outer_callers_window(tmp_path):
    # the middle helper names upstream itself, so the walk reads it (and where it names
    # _convert); one that names only _convert is walked too (below)
    middle = "import transformers\ndef _middle():\n    transformers.logging\n    _convert()\n"
    assert [
        s.versions for s in sites(tmp_path, HELPER, middle, V5.replace("_convert", "_middle"))
    ] == [WINDOW]


def test_each_place_that_names_it_gives_a_copy_with_its_conditions(tmp_path):
    found = sites(tmp_path, HELPER, V5, PRESENT.replace("install", "install_other"))
    assert sorted(s.versions for s in found) == [(), WINDOW]
    assert any("transformers.conversion_mapping.register" in s.requires for s in found)


def test_a_helper_registered_as_a_callback_under_a_test_takes_it(tmp_path):
    registered = V5.replace("        _convert()\n", "        HOOKS.append(_convert)\n")
    assert [s.versions for s in sites(tmp_path, HELPER, "HOOKS = []", registered)] == [WINDOW]


def test_a_helper_imported_by_another_module_takes_that_modules_conditions(tmp_path):
    other = "from proj.m import _convert\n" + V5
    assert [s.versions for s in sites(tmp_path, HELPER, extra={"proj/o.py": other})] == [WINDOW]


def test_a_caller_naming_nothing_upstream_itself_is_walked_for_its_conditions(tmp_path):
    # grimoire-rl: _register() is called only past a model-type test, in a function whose
    # own text names nothing upstream
    caller = (
        "TYPES = ('deepseek_v4',)\n"
        "def enable(model):\n"
        "    config = getattr(model, 'config', None)\n"
        "    if getattr(config, 'model_type', None) not in TYPES:\n"
        "        return False\n"
        "    _convert()\n"
    )
    (site,) = sites(tmp_path, HELPER, caller)
    assert site.requires == ("transformers.models.deepseek_v4",)


def test_recursion_is_no_way_in(tmp_path):
    recursive = HELPER + "    _convert()\n"
    assert [s.versions for s in sites(tmp_path, recursive, V5)] == [WINDOW]


def test_a_public_helper_also_runs_undecided_where_code_outside_may_call_it(tmp_path):
    # auto-round's disable_moe_conversion_mapping: called only under its v5 helper
    public = (HELPER.replace("_convert", "convert"), V5.replace("_convert", "convert"))
    found = sites(tmp_path, *public)
    assert [(s.versions, bool(s.undecided)) for s in found] == [((), True), (WINDOW, False)]
    assert "convert() is public" in found[0].undecided


@pytest.mark.parametrize(
    "prose",
    [
        "# _convert is the converter\n",
        "x = 1  # see _convert\n",
        'def other():\n    """Matches what _convert() builds."""\n',  # olive-ai's docstring
        '"""The module.\n\nIt calls _convert.\n"""\n',
    ],
)
def test_a_comment_or_docstring_naming_it_is_no_way_in(tmp_path, prose):
    assert [s.versions for s in sites(tmp_path, prose + HELPER, V5)] == [WINDOW]


def test_a_public_helper_its_module_exports_still_takes_its_callers_conditions(tmp_path):
    # unsloth's mistral_format_weight_conversions: in __all__, called only past a v5 import
    public = (HELPER.replace("_convert", "convert"), V5.replace("_convert", "convert"))
    found = sites(tmp_path, "__all__ = ['convert', 'install']\n", *public)
    assert [(s.versions, bool(s.undecided)) for s in found] == [((), True), (WINDOW, False)]


@pytest.mark.parametrize(
    ("modules", "extra"),
    [
        (
            ("import functools\n@functools.cache\n" + HELPER, V5),
            None,
        ),  # a decorator may register it
        ((HELPER, V5, "def run():\n    _convert()\n"), None),  # one place under no condition
        ((HELPER, V5, "NAMES = ['_convert']\n"), None),  # named in a string
        ((HELPER, V5, "def run():\n    __all__ = ['_convert']\n"), None),  # not the module's
        # a comment inside an expression is not told from it: as if code
        ((HELPER, V5, "x = max(1,  # _convert\n    2)\n"), None),
        # a test canary cannot read, in a caller naming nothing upstream but _convert
        ((HELPER, V5, "def run():\n    if flag():\n        _convert()\n"), None),
        ((HELPER, V5), {"proj/o.py": "from proj.m import _convert as convert\n"}),  # renamed
        ((HELPER, V5), {"proj/o.py": "import proj.m\ndef run():\n    proj.m._convert()\n"}),
        ((HELPER, "def _a():\n    _b()\n", "def _b():\n    _a()\n    _convert()\n"), None),  # cycle
    ],
)
def test_a_way_in_canary_cannot_see_all_of_leaves_it_as_it_was(tmp_path, modules, extra):
    assert [s.versions for s in sites(tmp_path, *modules, extra=extra)] == [()]


def test_functions_naming_each_other_round_take_the_conditions_of_the_way_in_from_outside(
    tmp_path,
):
    # _a calls _b, _b calls _a back; only install() calls in, under the v5 test
    cycle = (
        "def _convert():\n    from transformers.core_model_loading import WeightConverter\n"
        "    _b()\n"
        "def _b():\n    _convert()\n"
    )
    assert {s.versions for s in sites(tmp_path, cycle, V5)} == {WINDOW}


STATIC = (
    "import transformers\n"
    "from packaging import version\n"
    "V4 = version.parse(transformers.__version__).major < 5\n"
    "class Fast:\n"
    "    @staticmethod\n"
    "    def _convert():\n"
    "        from transformers.core_model_loading import WeightConverter\n"
    "    def load(self, kind):\n"
    "        if kind == 'a' and V4:\n"
    "            pass\n"
    "        elif kind == 'a':\n"
    "            {call}\n"
)


@pytest.mark.parametrize("call", ["Fast._convert()", "self._convert()"])
def test_a_static_method_called_only_under_a_version_test_takes_its_window(tmp_path, call):
    # unsloth's FastSentenceTransformer._patch_distilbert_v5, called only where
    # `is_distilbert and transformers4` failed and `is_distilbert` holds
    found = sites(tmp_path, STATIC.format(call=call))
    assert [s.versions for s in found] == [(("transformers", ">=5.dev0"),)]


@pytest.mark.parametrize(
    "extra",
    [
        "def run(x):\n    x._convert()\n",  # through something canary cannot type
        "class Slow(Fast):\n    def go(self):\n        self._convert()\n",  # a subclass
        # another class's static method of that name: Fast's self may be one of them
        "class Other(Fast):\n    @staticmethod\n    def _convert():\n        pass\n",
    ],
)
def test_a_static_method_named_where_canary_cannot_tell_whose_is_left_as_it_was(tmp_path, extra):
    found = sites(tmp_path, STATIC.format(call="Fast._convert()"), extra)
    assert [s.versions for s in found] == [()]


REGISTERED = (
    "from proj.registry import register_loader\n"
    '@register_loader("qwen3_5_moe", default=False)\n'
    "def load():\n"
    "    from transformers.core_model_loading import WeightConverter\n"
)


def test_a_function_registered_under_a_model_type_is_reached_only_through_it(tmp_path):
    # arctic-platform's loader for qwen3_5_moe; public, so also undecided (code outside)
    found = sites(tmp_path, REGISTERED, extra=REGISTRY_FILE)
    assert sorted((s.registered, bool(s.undecided)) for s in found) == [
        ((), True),
        (("transformers.models.qwen3_5_moe",), False),
    ]


def test_a_private_function_registered_under_model_types_has_no_other_way_in(tmp_path):
    private = REGISTERED.replace('"qwen3_5_moe"', 'name=("qwen3_5", "qwen3_5_moe")')
    (site,) = sites(tmp_path, private.replace("def load", "def _load"), extra=REGISTRY_FILE)
    assert site.registered == ("transformers.models.qwen3_5|transformers.models.qwen3_5_moe",)


def test_a_module_a_registered_function_imports_is_reached_only_through_it(tmp_path):
    # arctic-platform: the loader imports the implementation, whose top imports upstream
    loader = REGISTERED.replace(
        "    from transformers.core_model_loading import WeightConverter\n",
        "    from proj import impl\n",
    ).replace("def load", "def _load")
    impl = "from transformers.core_model_loading import WeightConverter\n"
    (site,) = sites(tmp_path, loader, extra={**REGISTRY_FILE, "proj/impl.py": impl})
    assert site.registered == ("transformers.models.qwen3_5_moe",)


@pytest.mark.parametrize(
    "decorators",
    [
        '@register_loader("qwen3_5_moe")\n@functools.cache\n',  # another decorator
        "@register_loader(KEY)\n",  # a key canary cannot read
        '@register_loader("Qwen-3.5")\n',  # no model type's spelling
        '@cache_for("qwen3_5_moe")\n',  # not a registration
    ],
)
def test_a_decorator_that_is_no_registration_under_model_types_leaves_it_as_it_was(
    tmp_path, decorators
):
    loader = "import functools\n" + REGISTERED.replace(
        '@register_loader("qwen3_5_moe", default=False)\n', decorators
    ).replace("def load", "def _load")
    assert [s.registered for s in sites(tmp_path, loader, extra=REGISTRY_FILE)] == [()]


REGISTRY = "def register_loader(name, **options):\n    return lambda f: f\n"
REGISTRY_FILE = {"proj/registry.py": REGISTRY}


def test_a_helper_applied_to_a_source_takes_the_conditions_of_its_callers(tmp_path):
    # unsloth_zoo's _add_suffix_match_to_bnb_skip, handed the source only past hasattr
    body = (
        "import inspect\n"
        "MATCH = 'key == name'\n"
        "def _widen(source):\n"
        "    return source.replace(MATCH, 'key in names', 1)\n"
        "try:\n"
        "    from transformers.integrations import bitsandbytes as bnb\n"
        "except ImportError:\n"
        "    bnb = None\n"
        "if bnb is not None and hasattr(bnb, '_replace'):\n"
        "    source = inspect.getsource(bnb._replace)\n"
        "    source = _widen(source)\n"
    )
    refs = project_surface(tmp_path, {"proj/__init__.py": "", "proj/m.py": body})
    (anchor,) = [r for r in refs if r.anchor == "key == name"]
    bnb = "transformers.integrations.bitsandbytes"
    assert [(s.line, s.requires) for s in anchor.sites] == [
        (4, ("transformers.integrations.bitsandbytes", f"{bnb}._replace"))
    ]


CALLED = "def install():\n    try:\n        _convert()\n    except {caught}:\n        pass\n"


@pytest.mark.parametrize(
    ("caller", "guarded"),
    [
        (CALLED.format(caught="Exception"), True),
        (CALLED.format(caught="(ValueError, Exception)"), True),
        (CALLED.replace("    except {caught}:", "    except:"), True),
        # the same, rewritten: the error named and logged, the call's value bound
        (CALLED.format(caught="Exception as error").replace("pass", "print(error)"), True),
        (CALLED.format(caught="Exception").replace("_convert()", "done = _convert()"), True),
        (CALLED.format(caught="ValueError"), False),  # an ImportError passes it
        # a handler that raises (again, or another error): the failure goes on
        (CALLED.format(caught="Exception").replace("pass", "raise"), False),
        (CALLED.format(caught="ImportError:\n        raise\n    except Exception"), False),
        # registered in the try, called later outside it
        (CALLED.format(caught="Exception").replace("_convert()", "HOOKS.append(_convert)"), False),
        # defined in the try, run when called: outside it
        (
            "def install():\n    try:\n        def later():\n            _convert()\n"
            "    except Exception:\n        pass\n    return later\n",
            False,
        ),
    ],
)
def test_a_helper_called_only_inside_a_try_swallowing_any_exception_is_guarded(
    tmp_path, caller, guarded
):
    # unsloth's _patch_remote_code_module: its `from transformers import masking_utils`
    # raises into `except Exception: pass` around every call of it
    (site,) = sites(tmp_path, HELPER, "HOOKS = []", caller)
    assert site.guarded is guarded


def test_a_helper_caught_at_one_call_and_not_at_another_is_unguarded_where_not(tmp_path):
    caught = CALLED.format(caught="Exception")
    plain = "def other():\n    if hasattr(transformers, 'X'):\n        _convert()\n"
    found = sites(tmp_path, HELPER, "import transformers", caught, plain)
    assert sorted((s.guarded, bool(s.requires)) for s in found) == [(False, True), (True, False)]


def test_a_helper_of_a_helper_called_inside_a_swallowing_try_is_guarded(tmp_path):
    middle = "import transformers\ndef _middle():\n    transformers.logging\n    _convert()\n"
    caller = CALLED.format(caught="Exception").replace("_convert", "_middle")
    assert [s.guarded for s in sites(tmp_path, HELPER, middle, caller)] == [True]
