"""How extraction starts its workers: forked only from a process with one thread.

A fork copies the locks other threads hold, held for good in the child (Python 3.12+
warns: "This process is multi-threaded, use of fork() may lead to deadlocks").
"""

from __future__ import annotations

import textwrap
import threading
from pathlib import Path

from canary.surface import extract


def project(tmp_path: Path, count: int = 20) -> list[str]:
    files = {"pkg/__init__.py": ""}
    for i in range(count):
        files[f"pkg/m{i}.py"] = f"""\
            from transformers import Trainer

            def patch{i}():
                return Trainer.method{i}
            """
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(textwrap.dedent(text))
    return sorted(files)


def test_with_another_thread_alive_the_walk_stays_in_this_process(tmp_path, monkeypatch):
    files = project(tmp_path)
    one = extract.survey(tmp_path, files, upstream=("transformers",), workers=1)

    def no_fork(method: str):
        raise AssertionError(f"a {method} pool was started while another thread runs")

    monkeypatch.setattr(extract.mp, "get_context", no_fork)
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert not extract._single_threaded()
        walked = extract.survey(tmp_path, files, upstream=("transformers",), workers=2)
    finally:
        stop.set()
        other.join()
    assert walked == one
    assert len(one.references) == 21  # Trainer and its 20 methods
