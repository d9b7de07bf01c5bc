"""The kinds of node in a physical topology, spelled as Kafka's ``describe()`` prints them.

Both the topology (which records a kind per node) and its description (which prints it) need these;
they live apart so the description can read a topology without importing the module that builds it.
"""

from __future__ import annotations

SOURCE = "Source"
PROCESSOR = "Processor"
SINK = "Sink"
