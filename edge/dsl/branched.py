"""``KStream.split()``: route each record to the first branch whose predicate matches."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from edge.dsl.options import Branched
from edge.errors import TopologyError
from edge.processor.ops.stream import KStreamBranch, KStreamPassThrough
from edge.topology import naming
from edge.topology.graph import ProcessorGraphNode

if TYPE_CHECKING:
    from edge.dsl.kstream import KStream


class BranchedKStream:
    def __init__(self, stream: KStream, split_name: str | None) -> None:
        self._stream = stream
        builder = stream._builder
        self._name = builder.names.processor(naming.BRANCH, split_name)
        self._prefix = split_name if split_name is not None else self._name
        self._predicates: list[Callable[[Any, Any], bool]] = []
        self._children: list[str] = []
        self._default: list[str | None] = [None]
        preds, children, default = self._predicates, self._children, self._default
        self._node = builder.add_node(
            ProcessorGraphNode(self._name, [stream._node], lambda: KStreamBranch(preds, children, default[0]))
        )
        self._result: dict[str, KStream] = {}
        self._closed = False

    def _add(self, branched: Branched | None, index: str) -> str:
        from edge.dsl.kstream import KStream

        if self._closed:
            raise TopologyError(
                "split(): no branches can be added after default_branch()/no_default_branch()"
            )
        b = branched or Branched()
        name = f"{self._prefix}{b.name if b.name is not None else index}"
        builder = self._stream._builder
        builder.names.reserve(name)
        node = builder.add_node(ProcessorGraphNode(name, [self._node], KStreamPassThrough))
        s = self._stream
        branch = KStream(builder, node, s.key_serde, s.value_serde, s.repartition_required)
        if b.function is not None:
            out = b.function(branch)
            if out is not None:
                self._result[name] = out
        elif b.consumer is not None:
            b.consumer(branch)
        else:
            self._result[name] = branch
        return name

    def branch(
        self, predicate: Callable[[Any, Any], bool], branched: Branched | None = None
    ) -> BranchedKStream:
        name = self._add(branched, str(len(self._predicates) + 1))
        self._predicates.append(predicate)
        self._children.append(name)
        return self

    def default_branch(self, branched: Branched | None = None) -> dict[str, KStream]:
        self._default[0] = self._add(branched, "0")
        self._closed = True
        return dict(self._result)

    def no_default_branch(self) -> dict[str, KStream]:
        self._closed = True
        return dict(self._result)
