"""Whether function bodies belong in the cached code index, measured where cases still run.

    python bench/bodies.py                    # every case checked again (a canary upgrade)
    python bench/bodies.py -k test_x          # one check's cases (a change to that check)

Runs ``pytest canary --canary-offline --canary-recompute`` (plus the arguments given) in
this process, timing what a check's first question about a function costs today: its body
(and data flow) built from the function's text. Then, for every module the run loaded,
what keeping every function's body in the cached index would cost instead: the bodies'
pickled bytes and the seconds to unpickle them, paid by every run that loads the module,
against the seconds the lazy bodies took. Your cache is read, never written but for the
remembered outcomes the run decides (the same ones a run decides anyway).
"""

from __future__ import annotations

import functools
import pickle
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from canary import indexstore
from canary.codeindex import model
from canary.codeindex.model import Class, Function, Module

_spent: dict[str, float] = {"body": 0.0, "flow": 0.0, "unpickle": 0.0}
_calls: dict[str, int] = {"body": 0, "flow": 0, "unpickle": 0}


def _timed(name: str, function: Callable[..., Any]) -> Callable[..., Any]:
    @functools.wraps(function)
    def timed(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            _spent[name] += time.perf_counter() - started
            _calls[name] += 1

    return timed


class Loaded:
    """A plugin that keeps the modules the run loaded, one per distinct content."""

    def __init__(self) -> None:
        self.modules: dict[str, Module] = {}

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        from canary.plugin import run_of

        run = run_of(session.config)
        if run is None:
            return
        for state in run.workspace._cases.values():  # a measurement: the run's own state
            for path, module in state.modules.items():
                if module is not None:
                    self.modules.setdefault(state.digests[path], module)


def functions_of(module: Module) -> Iterator[Function]:
    yield from module.functions.values()
    pending: list[Class] = list(module.classes.values())
    while pending:
        cls = pending.pop()
        yield from cls.methods.values()
        pending.extend(cls.classes.values())


def main(argv: list[str]) -> int:
    walk_function = model.walk_function
    model.walk_function = _timed("body", walk_function)
    model.flow_of_function = _timed("flow", model.flow_of_function)
    indexstore._load_index = _timed("unpickle", indexstore._load_index)
    loaded = Loaded()
    args = ["canary", "-q", "-p", "no:cacheprovider", "--canary-offline", "--canary-recompute"]
    started = time.perf_counter()
    status = pytest.main([*args, *argv], plugins=[loaded])
    wall = time.perf_counter() - started
    if status not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
        return int(status)
    spent, calls = dict(_spent), dict(_calls)  # the run's own, before the counterfactual

    # Each module pickled as the cache keeps it, then with every function's body beside
    # it in the same pickle (the file text they share is written once, as it would be).
    functions = 0
    build = unpickle_without = unpickle_with = 0.0
    index_bytes = kept_bytes = 0
    for module in loaded.modules.values():
        started = time.perf_counter()
        bodies = [walk_function(f._text, f._span) for f in functions_of(module)]
        build += time.perf_counter() - started
        functions += len(bodies)
        without = pickle.dumps(module, protocol=5)
        both = pickle.dumps((module, bodies), protocol=5)
        index_bytes += len(without)
        kept_bytes += len(both) - len(without)
        started = time.perf_counter()
        pickle.loads(without)
        unpickle_without += time.perf_counter() - started
        started = time.perf_counter()
        pickle.loads(both)
        unpickle_with += time.perf_counter() - started
    unpickle = unpickle_with - unpickle_without

    print(f"\n`pytest {' '.join([*args, *argv])}`: {wall:.1f} s in this process")
    print(
        f"  code indexes unpickled: {calls['unpickle']:,} in {spent['unpickle']:.2f} s "
        f"({len(loaded.modules):,} distinct files, {index_bytes / 1e6:.1f} MB pickled; "
        f"{unpickle_without:.2f} s to unpickle each once)"
    )
    print(
        f"  bodies built lazily, on a check's first question: {calls['body']:,} "
        f"(the {functions:,} functions of those files: {build:.2f} s), {spent['body']:.2f} s; "
        f"data flows {calls['flow']:,}, {spent['flow']:.2f} s"
    )
    print("if every body were kept in the cached index:")
    print(
        f"  +{kept_bytes / 1e6:.1f} MB pickled (+{kept_bytes / index_bytes:.0%}); "
        f"unpickling them +{unpickle:.2f} s, paid by every run that loads these files; "
        f"building them all at parse time {build:.2f} s"
    )
    saved = spent["body"]
    print(
        f"  would save at most {saved:.2f} s of this run's lazy bodies and cost {unpickle:.2f} s: "
        f"{'keep them' if unpickle < saved else 'leave them out'}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
