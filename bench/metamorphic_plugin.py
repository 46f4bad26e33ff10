"""A pytest plugin ``bench/metamorphic.py`` loads into a ``--collect-only`` run of the catalog:
it writes, to the JSON file named by ``CANARY_METAMORPHIC_OUT``, which upstream files each
package's checks read and every version bound of their windows."""

from __future__ import annotations

import json
import os
from collections import defaultdict

import pytest

from canary.catalog import CheckSpec


def pytest_collection_finish(session: pytest.Session) -> None:
    out = os.environ.get("CANARY_METAMORPHIC_OUT")
    if not out:
        return
    reads: defaultdict[str, set[str]] = defaultdict(set)
    bounds: defaultdict[str, set[str]] = defaultdict(set)
    for item in session.items:
        package = item.get_closest_marker("upstream")
        spec = CheckSpec.of(item)
        if not (package and package.args and spec):
            continue
        reads[package.args[0]].update(spec.reads)
        bounds[package.args[0]].update(b for b in (spec.window.since, spec.window.until) if b)
    with open(out, "w", encoding="utf-8") as stream:
        json.dump(
            {
                "reads": {p: sorted(v) for p, v in reads.items()},
                "bounds": {p: sorted(v) for p, v in bounds.items()},
            },
            stream,
        )
