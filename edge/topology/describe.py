"""``Topology.describe()``: the text Kafka Streams prints, so descriptions can be compared across restarts."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from edge.topology.topology import NodeDef, Subtopology, Topology


class TopologyDescription:
    def __init__(self, topology: Topology) -> None:
        self._topology = topology
        self.subtopologies: list[Subtopology] = topology.subtopologies()

    def _node_lines(self, node: NodeDef) -> list[str]:
        from edge.topology.topology import SINK, SOURCE

        if node.kind == SOURCE:
            head = f"    Source: {node.name} (topics: [{', '.join(node.topics)}])"
        elif node.kind == SINK:
            if node.topic is not None:
                head = f"    Sink: {node.name} (topic: {node.topic})"
            else:
                chooser = getattr(node.topic_chooser, "__qualname__", repr(node.topic_chooser))
                head = f"    Sink: {node.name} (extractor: {chooser})"
        else:
            head = f"    Processor: {node.name} (stores: [{', '.join(node.stores)}])"
        lines = [head]
        if node.kind != SINK:
            lines.append(f"      --> {', '.join(node.children) if node.children else 'none'}")
        if node.kind != SOURCE:
            lines.append(f"      <-- {', '.join(node.parents)}")
        return lines

    def __str__(self) -> str:
        nodes = self._topology._nodes
        out = ["Topologies:"]
        for st in self.subtopologies:
            suffix = " for global store (will not generate tasks)" if st.is_global else ""
            out.append(f"   Sub-topology: {st.id}{suffix}")
            for name in st.nodes:
                out.extend(self._node_lines(nodes[name]))
            out.append("")
        return "\n".join(out) + "\n"

    def __repr__(self) -> str:
        return str(self)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, TopologyDescription) and str(self) == str(other)

    __hash__ = None  # type: ignore[assignment]
