"""Logical graph (built by the DSL) and physical topology (sub-topologies a task runs)."""

from __future__ import annotations

from edge.topology.describe import TopologyDescription
from edge.topology.stores import StoreSpec
from edge.topology.topology import ProcessorTopology, Subtopology, Topology

__all__ = ["ProcessorTopology", "StoreSpec", "Subtopology", "Topology", "TopologyDescription"]
