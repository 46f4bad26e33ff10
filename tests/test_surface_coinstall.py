"""Which upstream releases can be installed beside the project, from both sides'
``Requires-Dist``: a shared dependency whose requirements leave no version."""

from __future__ import annotations

from canary.surface.coinstall import conflict, core_requirements, metadata_requirements


def test_only_core_requirements_with_a_range_count():
    lines = [
        "huggingface-hub<1.0,>=0.34.0",
        "Huggingface_Hub!=0.35.0",
        "numpy>=1.17",
        "torch",  # no range: conflicts with nothing
        "accelerate>=0.26.0; extra == 'torch'",
        "pywin32>=300; sys_platform == 'win32'",
        "not a requirement (",
    ]
    assert core_requirements(lines) == {
        "huggingface-hub": "!=0.35.0,<1.0,>=0.34.0",
        "numpy": ">=1.17",
    }


def test_the_first_shared_dependency_without_a_common_version_is_the_conflict():
    project = metadata_requirements(
        "Name: diffusers\nRequires-Dist: huggingface-hub<3.0,>=1.32.0\nRequires-Dist: numpy\n"
    )
    old = {"huggingface-hub": "<1.0,>=0.34.0", "numpy": ">=1.17"}
    new = {"huggingface-hub": "<2.0,>=1.0.0"}
    assert conflict(project, old) == "huggingface-hub: <3.0,>=1.32.0 against <1.0,>=0.34.0"
    assert conflict(project, new) is None
