"""Which nodes of a directed graph lie on a cycle: the project's modules that import each
other round, and its functions that name each other round."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Mapping
from typing import Generic, TypeVar

N = TypeVar("N", bound=Hashable)


def on_cycles(nodes: Iterable[N], successors: Callable[[N], Iterable[N]]) -> dict[N, frozenset[N]]:
    """The nodes reachable from ``nodes`` that reach themselves, each with the nodes of its
    cycles (its strongly connected component: two or more, or itself alone where it is its
    own successor). A property of the graph, so the same whichever node a walk starts from
    (Tarjan's algorithm, without recursion: a project's chains of imports may be deeper
    than Python's stack)."""
    search = _Tarjan(successors)
    for root in nodes:
        if root not in search.index:
            search.run(root)
    return search.found


class _Tarjan(Generic[N]):
    def __init__(self, successors: Callable[[N], Iterable[N]]) -> None:
        self.successors = successors
        self.index: dict[N, int] = {}
        self.low: dict[N, int] = {}
        self.stack: list[N] = []
        self.on_stack: set[N] = set()
        self.work: list[tuple[N, list[N]]] = []  # each node entered, with its successors left
        self.found: dict[N, frozenset[N]] = {}
        self.loops: set[N] = set()  # nodes that are their own successor

    def run(self, root: N) -> None:
        self._enter(root)
        while self.work:
            node, pending = self.work[-1]
            if pending:
                after = pending.pop()
                if after == node:
                    self.loops.add(node)
                if after not in self.index:
                    self._enter(after)
                elif after in self.on_stack:
                    self.low[node] = min(self.low[node], self.index[after])
                continue
            self.work.pop()
            if self.work:
                parent = self.work[-1][0]
                self.low[parent] = min(self.low[parent], self.low[node])
            if self.low[node] == self.index[node]:
                self._close(node)

    def _enter(self, node: N) -> None:
        self.index[node] = self.low[node] = len(self.index)
        self.stack.append(node)
        self.on_stack.add(node)
        self.work.append((node, list(self.successors(node))))

    def _close(self, root: N) -> None:
        """Pop the component ``root`` heads; two or more nodes are a cycle."""
        component = []
        while True:
            member = self.stack.pop()
            self.on_stack.discard(member)
            component.append(member)
            if member == root:
                break
        if len(component) > 1 or root in self.loops:
            cycle = frozenset(component)
            self.found.update(dict.fromkeys(cycle, cycle))


V = TypeVar("V")


def least_fixed_point(
    cycle: frozenset[N],
    start: Callable[[N], set[V]],
    step: Callable[[N, Mapping[N, set[V]]], set[V]],
    limit: int,
) -> dict[N, set[V]] | None:
    """Each node of ``cycle`` with the least set that holds ``start(node)`` and
    ``step(node, sets so far)``, grown until none changes (``step`` only grows as the sets
    do); None where one would hold more than ``limit``."""
    found = {node: start(node) for node in cycle}
    changed = True
    while changed:
        changed = False
        for node in sorted(cycle):  # type: ignore[type-var]
            now = found[node] | step(node, found)
            if len(now) > limit:
                return None
            if now != found[node]:
                found[node], changed = now, True
    return found
