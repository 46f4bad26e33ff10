"""Unit tests of canary.tags: loading tags.toml strictly, resolving and rewriting releases.

Offline: ``pip index versions`` is replaced by a fake ``subprocess.run``.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from packaging.version import Version

from canary import tags
from canary.errors import ConfigError, InfrastructureError
from canary.tags import format_versions, load_tags, rewrite_versions, update_tags_file

REPO_TAGS = Path(__file__).resolve().parents[1] / "tags.toml"

# One package table, as TOML literals per key; tests override or drop single keys.
WIDGET = {
    "repo": '"acme/widget"',
    "package_dir": '"src"',
    "floor": '"1.0.0"',
    "anchors": '["1.1.0"]',
    "broken": '{ "2.0.0" = "segfaults on import" }',
    "versions": '["1.0.0", "1.1.0", "2.0.0"]',
}


def render(name: str = "widget", **overrides: str | None) -> str:
    """``[packages.NAME]`` with WIDGET's keys; an override of None drops that key."""
    table = {**WIDGET, **overrides}
    lines = [f"{key} = {value}" for key, value in table.items() if value is not None]
    return f"[packages.{name}]\n" + "\n".join(lines) + "\n"


@pytest.fixture
def tags_file(tmp_path):
    def write(text: str) -> Path:
        path = tmp_path / "tags.toml"
        path.write_text(text, encoding="utf-8")
        return path

    return write


# ------------------------------------------------------------------------------ loading


def test_a_valid_file_loads_every_field(tags_file):
    path = tags_file(render() + render("gadget", package_dir=None, anchors=None, broken=None))

    loaded = load_tags(path)

    widget = loaded.package("widget")
    assert loaded.path == path
    assert widget.repo == "acme/widget"
    assert widget.package_dir == "src"
    assert widget.floor == Version("1.0.0")
    assert widget.versions == ("1.0.0", "1.1.0", "2.0.0")
    assert widget.anchors == ("1.1.0",)
    assert widget.broken_reason("2.0.0") == "segfaults on import"
    assert widget.broken_reason("1.1.0") is None
    gadget = loaded.package("gadget")
    assert (gadget.package_dir, gadget.anchors, dict(gadget.broken)) == ("", (), {})


def test_a_runtime_table_is_kept_for_the_runtime_tier(tags_file):
    path = tags_file(render() + '\n[runtime.cpu]\ntorch = "2.5.1"\n')

    assert load_tags(path).runtime == {"cpu": {"torch": "2.5.1"}}


def test_asking_for_an_unknown_package_names_the_known_ones(tags_file):
    loaded = load_tags(tags_file(render()))

    with pytest.raises(ConfigError, match=r"unknown package 'nope'.*widget"):
        loaded.package("nope")


BAD_PACKAGE_TABLES = {
    "unknown package key": ({"colour": '"red"'}, ["unknown key", "colour"]),
    "missing repo": ({"repo": None}, ["missing key", "repo"]),
    "missing floor": ({"floor": None}, ["missing key", "floor"]),
    "missing versions": ({"versions": None}, ["missing key", "versions"]),
    "repo without owner": ({"repo": '"widget"'}, ["repo", "'widget'", "owner/name"]),
    "repo with three parts": ({"repo": '"acme/widget/x"'}, ["repo", "owner/name"]),
    "repo not a string": ({"repo": "3"}, ["repo must be a string"]),
    "floor not a version": ({"floor": '"one"'}, ["floor", "'one' is not a version"]),
    "versions not a list": ({"versions": '"1.0.0"'}, ["versions must be a list"]),
    "versions empty": ({"versions": "[]", "anchors": None, "broken": None}, ["versions is empty"]),
    "bad version string": (
        {"versions": '["1.0.0", "banana"]'},
        ["versions", "'banana' is not a version"],
    ),
    "version with a v prefix": (
        {"versions": '["1.0.0", "v1.1.0", "2.0.0"]'},
        ["versions", "'v1.1.0'", "write it as '1.1.0'"],
    ),
    "version with a leading zero": (
        {"versions": '["1.0.0", "1.01.0", "2.0.0"]'},
        ["versions", "'1.01.0'", "write it as '1.1.0'"],
    ),
    "duplicate version": ({"versions": '["1.0.0", "1.1.0", "1.1.0", "2.0.0"]'}, ["twice"]),
    "same version spelt twice": (
        {"versions": '["1.0.0", "1.1.0", "1.1", "2.0.0"]'},
        ["versions", "'1.1'", "twice"],
    ),
    "release candidate in versions": (
        {"versions": '["1.0.0", "1.1.0", "2.0.0", "2.1.0rc1"]'},
        ["'2.1.0rc1'", "not a stable release"],
    ),
    "dev release in versions": (
        {"versions": '["1.0.0", "1.1.0", "2.0.0", "2.1.0.dev0"]'},
        ["'2.1.0.dev0'", "not a stable release"],
    ),
    "version below floor": (
        {"versions": '["0.9.0", "1.0.0", "1.1.0", "2.0.0"]'},
        ["'0.9.0'", "below floor 1.0.0"],
    ),
    "floor above every release": (
        {"floor": '"3.0.0"'},
        ["floor 3.0.0 is above every listed release"],
    ),
    "anchor not in versions": ({"anchors": '["1.1.0", "1.5.0"]'}, ["anchors", "'1.5.0'"]),
    "anchor not canonical": ({"anchors": '["v1.1.0"]'}, ["anchors", "write it as '1.1.0'"]),
    "broken not in versions": ({"broken": '{ "1.5.0" = "bad" }'}, ["broken", "'1.5.0'"]),
    "broken not a table": ({"broken": '["2.0.0"]'}, ["broken must be a table"]),
    "broken key not a version": ({"broken": '{ "later" = "bad" }'}, ["broken", "'later'"]),
    "broken with empty reason": ({"broken": '{ "2.0.0" = "" }'}, ["broken", "needs a reason"]),
    "broken with blank reason": ({"broken": '{ "2.0.0" = "  " }'}, ["needs a reason"]),
    "broken reason not text": ({"broken": '{ "2.0.0" = 1 }'}, ["needs a reason"]),
}


@pytest.mark.parametrize(
    ("overrides", "fragments"), BAD_PACKAGE_TABLES.values(), ids=BAD_PACKAGE_TABLES.keys()
)
def test_a_bad_package_table_stops_with_file_key_and_problem(tags_file, overrides, fragments):
    path = tags_file(render(**overrides))

    with pytest.raises(ConfigError) as caught:
        load_tags(path)

    message = str(caught.value)
    assert str(path) in message
    assert "[packages.widget]" in message
    for fragment in fragments:
        assert fragment in message


BAD_FILES = {
    "unknown top-level key": (render() + "\n[extras]\nx = 1\n", "unknown top-level key"),
    "no packages at all": ('[runtime.cpu]\ntorch = "2.5.1"\n', "[packages.<name>] tables"),
    "package not a table": ("packages = { widget = 1 }\n", "[packages.widget] must be a table"),
    "runtime not a table": ("runtime = 1\n" + render(), "[runtime] must be a table"),
    "invalid TOML": (render() + "versions = [\n", "not valid TOML"),
}


@pytest.mark.parametrize(("text", "fragment"), BAD_FILES.values(), ids=BAD_FILES.keys())
def test_a_bad_file_stops_with_the_file_and_problem(tags_file, text, fragment):
    path = tags_file(text)

    with pytest.raises(ConfigError) as caught:
        load_tags(path)

    assert str(path) in str(caught.value)
    assert fragment in str(caught.value)


def test_a_missing_file_says_how_to_point_at_one(tmp_path):
    path = tmp_path / "absent.toml"

    with pytest.raises(ConfigError, match="file not found") as caught:
        load_tags(path)

    assert str(path) in str(caught.value)
    assert "--canary-tags-file" in str(caught.value)


def test_the_repository_tags_file_loads_sorted_above_floor_with_listed_anchors():
    loaded = load_tags(REPO_TAGS)

    assert set(loaded.packages) >= {"transformers", "trl", "peft"}
    for package in loaded.packages.values():
        parsed = [Version(v) for v in package.versions]
        assert parsed == sorted(parsed), f"{package.name}: versions not ascending"
        assert min(parsed) >= package.floor, package.name
        assert package.anchors, f"{package.name}: no anchors"
        assert set(package.anchors) <= set(package.versions), package.name


# ------------------------------------------------------------------- resolving releases

PIP_OUTPUT = (
    "widget (2.1.0)\n"
    "Available versions: 2.1.0, 2.1.0rc1, 2.0.0.post1, 2.0.0, 2.0.0.dev3, 1.10.0, 1.9.0, "
    "1.2.0, 1.1.0, 0.9.0\n"
    "  INSTALLED: 1.9.0\n"
    "  LATEST:    2.1.0\n"
)


@pytest.fixture
def fake_pip_index(monkeypatch):
    """Replace ``subprocess.run`` with a canned answer; returns the commands it was given."""
    calls: list[list[str]] = []

    def install(*, stdout: str = PIP_OUTPUT, stderr: str = "", returncode: int = 0, error=None):
        def run(command, **kwargs):
            calls.append(list(command))
            if error is not None:
                raise error
            return subprocess.CompletedProcess(command, returncode, stdout, stderr)

        monkeypatch.setattr(tags.subprocess, "run", run)
        return calls

    return install


def test_stable_releases_keeps_only_stable_ones_at_or_above_floor_oldest_first(fake_pip_index):
    calls = fake_pip_index()

    releases = tags.stable_releases("widget", Version("1.2.0"))

    assert releases == ["1.2.0", "1.9.0", "1.10.0", "2.0.0", "2.0.0.post1", "2.1.0"]
    assert calls == [[sys.executable, "-m", "pip", "index", "versions", "widget"]]


@pytest.mark.parametrize(
    ("answer", "fragment"),
    [
        ({"returncode": 1, "stderr": "ERROR: network is down"}, "exit 1"),
        ({"stdout": "widget (2.1.0)\n"}, "no 'Available versions:' line"),
        ({"error": FileNotFoundError("no python")}, "cannot run pip"),
        ({"error": subprocess.TimeoutExpired(["pip"], 300)}, "did not answer"),
    ],
    ids=["pip fails", "no versions line", "pip missing", "pip hangs"],
)
def test_stable_releases_reports_pip_trouble_as_infrastructure(fake_pip_index, answer, fragment):
    fake_pip_index(**answer)

    with pytest.raises(InfrastructureError, match=fragment):
        tags.stable_releases("widget", Version("1.0.0"))


def test_stable_releases_with_nothing_above_floor_is_a_config_error(fake_pip_index):
    fake_pip_index()

    with pytest.raises(ConfigError, match=r"widget: no stable release at or above floor 3\.0\.0"):
        tags.stable_releases("widget", Version("3.0.0"))


# --------------------------------------------------------------------------- rewriting

HEAD = """\
# Hand-written header: keep me.

[packages.widget]
# why the floor is 1.0.0
repo = "acme/widget"
floor = "1.0.0"   # trailing comment
anchors = ["1.1.0"]
"""
WIDGET_ARRAY = """versions = [
    "1.0.0", "1.1.0",
]"""
TAIL = """  # after the array
broken = {}

[packages.widget_pro]
repo = "acme/widget-pro"
floor = "0.1.0"
versions = ["0.1.0"]

[runtime.cpu]
torch = "2.5.1"
"""
TAGS_TEXT = HEAD + WIDGET_ARRAY + TAIL


def test_rewrite_replaces_only_the_named_packages_versions_array():
    new = ["1.0.0", "1.1.0", "1.2.0"]

    rewritten = rewrite_versions(TAGS_TEXT, {"widget": new})

    assert rewritten == HEAD + format_versions(new) + TAIL


def test_rewrite_leaves_a_package_with_a_prefix_of_the_name_alone():
    rewritten = rewrite_versions(TAGS_TEXT, {"widget_pro": ["0.1.0", "0.2.0"]})

    assert rewritten.startswith(HEAD + WIDGET_ARRAY)
    parsed = tags.parse_tags(tags.tomllib.loads(rewritten), Path("tags.toml"))
    assert parsed.package("widget_pro").versions == ("0.1.0", "0.2.0")
    assert parsed.package("widget").versions == ("1.0.0", "1.1.0")


def test_format_versions_wraps_rows_and_reads_back_as_the_same_list():
    versions = [f"1.{minor}.0" for minor in range(11)]

    text = format_versions(versions, per_line=4)

    assert text.count("\n") == 4  # three rows plus the closing bracket
    assert tags.tomllib.loads(text)["versions"] == versions


@pytest.mark.parametrize(
    ("text", "fragment"),
    [
        (TAGS_TEXT, "no [packages.gadget] table"),
        ('[packages.gadget]\nrepo = "a/b"\n', "[packages.gadget] has no versions"),
    ],
    ids=["no table", "no versions array"],
)
def test_rewrite_refuses_a_table_it_cannot_find(text, fragment):
    with pytest.raises(ConfigError) as caught:
        rewrite_versions(text, {"gadget": ["1.0.0"]})

    assert fragment in str(caught.value)


def test_rewrite_copes_with_a_bracket_in_a_comment_inside_the_array():
    text = '[packages.widget]\nversions = [\n    "1.0.0",  # [yanked] 1.0.1 skipped\n]\n'

    rewritten = rewrite_versions(text, {"widget": ["1.0.0", "1.1.0"]})

    assert tags.tomllib.loads(rewritten)["packages"]["widget"]["versions"] == ["1.0.0", "1.1.0"]


@pytest.fixture
def fake_index(monkeypatch):
    def install(releases: dict[str, list[str]]) -> None:
        monkeypatch.setattr(tags, "stable_releases", lambda name, floor: releases[name])

    return install


def test_update_rewrites_the_file_and_reports_added_and_removed(tmp_path, fake_index):
    path = tmp_path / "tags.toml"
    path.write_text(TAGS_TEXT, encoding="utf-8")
    fake_index({"widget": ["1.1.0", "1.2.0", "2.0.0"], "widget_pro": ["0.1.0"]})

    changes = update_tags_file(path)

    assert changes == {"widget": (["1.2.0", "2.0.0"], ["1.0.0"]), "widget_pro": ([], [])}
    written = path.read_text(encoding="utf-8")
    assert written == HEAD + format_versions(["1.1.0", "1.2.0", "2.0.0"]) + TAIL.replace(
        'versions = ["0.1.0"]', format_versions(["0.1.0"])
    )
    assert load_tags(path).package("widget").versions == ("1.1.0", "1.2.0", "2.0.0")


def test_update_refuses_to_write_a_file_it_would_not_load(tmp_path, fake_index):
    path = tmp_path / "tags.toml"
    path.write_text(TAGS_TEXT, encoding="utf-8")
    fake_index({"widget": ["1.0.0", "1.2.0"], "widget_pro": ["0.1.0"]})  # anchor 1.1.0 gone

    with pytest.raises(ConfigError, match=r"anchors: '1\.1\.0' is not in versions"):
        update_tags_file(path)

    assert path.read_text(encoding="utf-8") == TAGS_TEXT
