"""Only regular files are read from a source folder: a link is followed only to a regular
file inside the target; a loop, a dangling link, a link out of the target, a FIFO are
skipped with a warning naming them, and extraction finishes."""

from __future__ import annotations

import os

from canary.surface.extract import extract
from canary.surface.targets import open_target

CODE = "from transformers.models.llama import modeling_llama\nmodeling_llama.X.forward = None\n"


def test_only_regular_files_inside_the_target_are_read(tmp_path, capsys):
    outside = tmp_path / "outside.py"
    outside.write_text(CODE)
    root = tmp_path / "proj"
    package = root / "proj"
    package.mkdir(parents=True)
    (package / "patch.py").write_text(CODE)
    (package / "alias.py").symlink_to("patch.py")
    (package / "loop.py").symlink_to("loop.py")
    (package / "dangling.py").symlink_to("gone.py")
    (package / "escape.py").symlink_to(outside)
    (package / "folder.py").symlink_to(package)  # a folder: listed as one, never read
    (package / "again").symlink_to("..")  # a folder loop: never entered
    os.mkfifo(package / "fifo.py")

    loaded = open_target(str(root), download_dir=tmp_path / "dl")
    assert loaded.files == ("proj/alias.py", "proj/patch.py")
    err = capsys.readouterr().err
    for name, why in [
        ("loop.py", "a link that cannot be resolved"),
        ("dangling.py", "a dangling link"),
        ("escape.py", f"a link to {outside.resolve()}, outside the target"),
        ("fifo.py", "not a regular file (a FIFO, a socket or a device)"),
    ]:
        assert f"canary: warning: skipped {package / name}: {why}" in err
    references = extract(loaded.root, loaded.files, upstream=["transformers"])
    (patch,) = [r for r in references if r.target.endswith("X.forward")]
    assert sorted(site.path for site in patch.sites) == ["proj/alias.py", "proj/patch.py"]


def test_a_garbage_requirement_on_an_upstream_package_is_said_not_dropped(capsys):
    from canary.surface.targets import declared

    ranges = declared(["transformers>=4.5 <<garbage", "trl>=1"], ["transformers", "trl"]).ranges
    assert ranges == {"trl": ">=1"}
    err = capsys.readouterr().err
    assert "canary: warning: requirement 'transformers>=4.5 <<garbage' does not parse" in err
