"""``Topology.describe()``: the text Kafka Streams prints, line for line, so a description can be compared
with Kafka's (and across restarts: a renamed node, store or topic shows up as a diff).

Kafka's ``InternalTopologyBuilder.describe()`` does not print nodes in creation order. Each sub-topology
is a ``TreeSet`` ordered by ``NodeComparator``: the size of a node's sub-tree (the number of paths from
it, itself included) descending, then the name. The ``-->``/``<--`` lists are ``TreeSet``s ordered by the
same comparator, but filled while the sizes are still being computed, in the iteration order of a Java
``HashMap`` of the node names; store and topic lists are Java ``HashSet``s. The text depends on those
Java collection orders, so they are reproduced here exactly: :func:`java_hash_order` (``HashMap``
iteration) and :class:`_JavaTreeSet` (``TreeMap``'s red-black insertion, whose comparisons see the sizes
of the moment).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from edge.topology.kinds import SINK, SOURCE

if TYPE_CHECKING:
    from edge.topology.topology import NodeDef, Subtopology, Topology


# -- Java collection orders -----------------------------------------------------------------------------
def java_string_hash(s: str) -> int:
    """``String.hashCode()``: over UTF-16 code units, as a signed 32-bit int."""
    data = s.encode("utf-16-be")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + (data[i] << 8 | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def _spread(h: int) -> int:
    """``HashMap.hash``: ``h ^ (h >>> 16)`` on the unsigned 32-bit pattern."""
    u = h & 0xFFFFFFFF
    return u ^ (u >> 16)


def _capacity(n: int, *, copied: bool) -> int:
    """Table size of a Java HashMap/HashSet holding ``n`` keys: grown by ``add`` from 16 (resize once
    the size exceeds 0.75 x capacity), or sized by ``new HashSet<>(collection)``."""
    if copied:
        want = max(int(n / 0.75) + 1, 16)
        cap = 1
        while cap < want:
            cap <<= 1
        return cap
    cap = 16
    while n > cap * 0.75:
        cap <<= 1
    return cap


def java_hash_order(names: Iterable[str], *, copied: bool = False) -> list[str]:
    """Iteration order of a Java ``HashSet<String>`` filled with ``names`` in the given order: by bucket,
    then (within a bucket, and across resizes) by insertion."""
    unique = list(dict.fromkeys(names))
    mask = _capacity(len(unique), copied=copied) - 1
    indexed = sorted(enumerate(unique), key=lambda p: (_spread(java_string_hash(p[1])) & mask, p[0]))
    return [name for _, name in indexed]


def java_set_str(names: Iterable[str]) -> str:
    """``new HashSet<>(names).toString()``: ``[a, b]``."""
    return "[" + ", ".join(java_hash_order(names, copied=True)) + "]"


class _Entry:
    __slots__ = ("black", "key", "left", "parent", "right")

    def __init__(self, key: Any, parent: _Entry | None) -> None:
        self.key, self.parent = key, parent
        self.left: _Entry | None = None
        self.right: _Entry | None = None
        self.black = True


class _JavaTreeSet:
    """``java.util.TreeSet`` (a ``TreeMap``): red-black insertion with the comparator evaluated at insert
    time, so its iteration order is what Java's is even when the compared sizes change afterwards."""

    def __init__(self, compare: Callable[[Any, Any], int]) -> None:
        self._compare = compare
        self._root: _Entry | None = None

    def add(self, key: Any) -> None:
        t = self._root
        if t is None:
            self._root = _Entry(key, None)
            return
        while True:
            parent = t
            cmp = self._compare(key, t.key)
            if cmp == 0:
                return
            t = t.left if cmp < 0 else t.right
            if t is None:
                break
        e = _Entry(key, parent)
        if cmp < 0:
            parent.left = e
        else:
            parent.right = e
        self._fix_after_insertion(e)

    def __iter__(self) -> Any:
        out: list[Any] = []
        stack: list[_Entry] = []
        node = self._root
        while stack or node is not None:
            while node is not None:
                stack.append(node)
                node = node.left
            node = stack.pop()
            out.append(node.key)
            node = node.right
        return iter(out)

    # TreeMap's helpers treat null as black and tolerate null parents
    @staticmethod
    def _black(e: _Entry | None) -> bool:
        return True if e is None else e.black

    @staticmethod
    def _parent(e: _Entry | None) -> _Entry | None:
        return None if e is None else e.parent

    @staticmethod
    def _set_black(e: _Entry | None, black: bool) -> None:
        if e is not None:
            e.black = black

    def _rotate_left(self, p: _Entry | None) -> None:
        if p is None:
            return
        r = p.right
        assert r is not None
        p.right = r.left
        if r.left is not None:
            r.left.parent = p
        r.parent = p.parent
        if p.parent is None:
            self._root = r
        elif p.parent.left is p:
            p.parent.left = r
        else:
            p.parent.right = r
        r.left = p
        p.parent = r

    def _rotate_right(self, p: _Entry | None) -> None:
        if p is None:
            return
        left = p.left
        assert left is not None
        p.left = left.right
        if left.right is not None:
            left.right.parent = p
        left.parent = p.parent
        if p.parent is None:
            self._root = left
        elif p.parent.right is p:
            p.parent.right = left
        else:
            p.parent.left = left
        left.right = p
        p.parent = left

    def _fix_after_insertion(self, x: _Entry | None) -> None:
        par, black, set_black = self._parent, self._black, self._set_black
        assert x is not None
        x.black = False
        while x is not None and x is not self._root and not black(x.parent):
            grand = par(par(x))
            if par(x) is (None if grand is None else grand.left):
                y = None if grand is None else grand.right
                if not black(y):
                    set_black(par(x), True)
                    set_black(y, True)
                    set_black(grand, False)
                    x = grand
                else:
                    if x is (None if par(x) is None else par(x).right):  # type: ignore[union-attr]
                        x = par(x)
                        self._rotate_left(x)
                    set_black(par(x), True)
                    set_black(par(par(x)), False)
                    self._rotate_right(par(par(x)))
            else:
                y = None if grand is None else grand.left
                if not black(y):
                    set_black(par(x), True)
                    set_black(y, True)
                    set_black(grand, False)
                    x = grand
                else:
                    if x is (None if par(x) is None else par(x).left):  # type: ignore[union-attr]
                        x = par(x)
                        self._rotate_right(x)
                    set_black(par(x), True)
                    set_black(par(par(x)), False)
                    self._rotate_left(par(par(x)))
        assert self._root is not None
        self._root.black = True


# -- the description ------------------------------------------------------------------------------------
class _Node:
    """Kafka's ``AbstractNode``: ``size`` is the number of paths from this node (itself included)."""

    def __init__(self, node: NodeDef) -> None:
        self.node = node
        self.name = node.name
        self.size = 1
        self.predecessors = _JavaTreeSet(_compare)
        self.successors = _JavaTreeSet(_compare)
        self.pred_list: list[_Node] = []


def _compare(a: _Node, b: _Node) -> int:
    """Kafka's ``NodeComparator``: larger sub-tree first, then by name."""
    if a is b:
        return 0
    if a.size != b.size:
        return b.size - a.size
    return (a.name > b.name) - (a.name < b.name)


def _update_size(node: _Node, delta: int) -> None:
    node.size += delta
    for p in node.pred_list:
        _update_size(p, delta)


def _names(nodes: Iterable[_Node]) -> str:
    names = [n.name for n in nodes]
    return ", ".join(names) if names else "none"


class TopologyDescription:
    def __init__(self, topology: Topology) -> None:
        self._topology = topology
        self.subtopologies: list[Subtopology] = topology.subtopologies()

    def _sorted_nodes(self, st: Subtopology) -> list[_Node]:
        """Kafka's ``describeSubtopology``: connect nodes in ``HashMap`` order, then sort."""
        defs = self._topology._nodes
        by_name = {name: _Node(defs[name]) for name in java_hash_order(st.nodes)}
        for node in by_name.values():
            for parent_name in node.node.parents:
                pred = by_name[parent_name]
                node.predecessors.add(pred)
                node.pred_list.append(pred)
                pred.successors.add(node)
                _update_size(pred, node.size)
        return sorted(by_name.values(), key=lambda n: (-n.size, n.name))

    @staticmethod
    def _node_text(n: _Node) -> str:
        node = n.node
        if node.kind == SOURCE:
            return f"Source: {n.name} (topics: {java_set_str(node.topics)})\n      --> {_names(n.successors)}"
        if node.kind == SINK:
            if node.topic is not None:
                head = f"Sink: {n.name} (topic: {node.topic})"
            else:
                chooser = node.topic_chooser
                label = getattr(chooser, "__qualname__", None) or type(chooser).__qualname__
                head = f"Sink: {n.name} (extractor class: {label})"
            return f"{head}\n      <-- {_names(n.predecessors)}"
        return (
            f"Processor: {n.name} (stores: {java_set_str(node.stores)})\n"
            f"      --> {_names(n.successors)}\n      <-- {_names(n.predecessors)}"
        )

    @staticmethod
    def _global_text(gid: int, source: NodeDef, proc: NodeDef) -> str:
        """Kafka's ``GlobalStore.toString()`` (no blank line after it, unlike a sub-topology)."""
        return (
            f"Sub-topology: {gid} for global store (will not generate tasks)\n"
            f"    Source: {source.name} (topics: [{source.topics[0]}])\n      --> {proc.name}\n"
            f"    Processor: {proc.name} (stores: [{proc.stores[0]}])\n      --> none\n"
            f"      <-- {source.name}\n"
        )

    def _groups(self) -> list[tuple[int, Any]]:
        """Kafka's node groups in id order. Global stores run in one global task here, but Kafka gives
        each (source, processor) pair its own group id, numbered with the others by first node."""
        defs = self._topology._nodes
        order = {name: i for i, name in enumerate(defs)}
        groups: list[tuple[int, Any]] = []
        for st in self.subtopologies:
            if not st.is_global:
                groups.append((min(order[n] for n in st.nodes), st))
                continue
            for name in st.nodes:
                source = defs[name]
                if source.kind == "Source":
                    proc = defs[source.children[0]]
                    groups.append((min(order[source.name], order[proc.name]), (source, proc)))
        groups.sort(key=lambda g: g[0])
        return groups

    def __str__(self) -> str:
        out = ["Topologies:\n "]
        for gid, (_, group) in enumerate(self._groups()):
            out.append("  ")
            if isinstance(group, tuple):
                out.append(self._global_text(gid, *group))
                continue
            nodes = "".join(f"    {self._node_text(n)}\n" for n in self._sorted_nodes(group))
            out.append(f"Sub-topology: {gid}\n{nodes}\n")
        return "".join(out)

    def __repr__(self) -> str:
        return str(self)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TopologyDescription) and str(self) == str(other)

    __hash__ = None  # type: ignore[assignment]
