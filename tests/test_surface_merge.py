"""References merged by key in one pass: first-seen order, the first's fields, every site
sorted once (merging one at a time re-sorted every site on each merge: quadratic)."""

from __future__ import annotations

import functools

from canary.surface.model import Kind, Reference, Site, merge_references


def ref(target: str, *lines: int, path: str = "p.py") -> Reference:
    return Reference("toy", target, Kind.PATCH, tuple(Site(path, n) for n in lines))


def test_one_reference_per_key_in_first_seen_order_with_every_site_sorted():
    merged = merge_references(
        [ref("toy.b", 9), ref("toy.a", 3), ref("toy.b", 2, 9), ref("toy.a", 1)]
    )
    assert [(r.target, [s.line for s in r.sites]) for r in merged] == [
        ("toy.b", [2, 9]),
        ("toy.a", [1, 3]),
    ]


def test_the_same_as_merging_one_at_a_time():
    references = [ref("toy.x", n % 7, path=f"m{n % 3}.py") for n in range(50)]
    pairwise = functools.reduce(lambda a, b: a.merged(b), references)
    assert merge_references(references) == (pairwise,)
