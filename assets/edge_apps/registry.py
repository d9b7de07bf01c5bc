"""The pipeline's edge apps, as its declaration lists them, so the lineage graph, the demo and the UI
agree on them.

An entry names the app's ``application.id`` (its consumer group and the prefix of its internal
topics), the ``MODULE:ATTR`` that builds its topology (what ``streamhouse edge run`` takes), the
guarantee and the ``--server`` it is deployed with. Everything else (input and output topics, state
stores, changelog and repartition topics, the ``describe()`` text) is read from the topology itself,
built without a broker, so the graph cannot drift from the code.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from edge.errors import StreamhouseError
from edge.topology import Topology


class EdgeAppError(StreamhouseError):
    pass


@dataclass(frozen=True)
class EdgeApp:
    application_id: str
    #: ``module:attr``: a Topology, a StreamsBuilder or a function returning one (default arguments)
    target: str
    #: ``host:port`` of the app's query/metrics HTTP server as deployed (``--server``)
    server: str
    guarantee: str = "at_least_once"
    description: str = ""

    @cached_property
    def topology(self) -> Topology:
        """The app's topology, built in this process (no broker, no state: the DSL only records nodes)."""
        module_name, sep, attr = self.target.partition(":")
        if not sep:
            raise EdgeAppError(f"edge app {self.application_id}: expected MODULE:ATTR, got {self.target!r}")
        obj: Any = importlib.import_module(module_name)
        for part in attr.split("."):
            obj = getattr(obj, part)
        if callable(obj) and not isinstance(obj, Topology) and not hasattr(obj, "build"):
            obj = obj()
        if hasattr(obj, "build") and not isinstance(obj, Topology):
            obj = obj.build()
        if not isinstance(obj, Topology):
            raise EdgeAppError(f"edge app {self.application_id}: {self.target} is not a topology")
        return obj

    @property
    def input_topics(self) -> list[str]:
        """External topics the app reads (repartition topics it writes and reads itself excluded)."""
        internal = self.topology.internal_topics
        topics = {t for st in self.topology.subtopologies() for t in st.source_topics if t not in internal}
        return sorted(topics)

    @property
    def output_topics(self) -> list[str]:
        internal = self.topology.internal_topics
        topics = {t for st in self.topology.subtopologies() for t in st.sink_topics if t not in internal}
        return sorted(topics)

    @property
    def stores(self) -> list[str]:
        return self.topology.store_names()

    @property
    def changelog_topics(self) -> dict[str, str]:
        return self.topology.changelog_topics(self.application_id)

    @property
    def repartition_topics(self) -> list[str]:
        return sorted(self.topology.repartition_topics(self.application_id))

    def describe(self) -> str:
        return str(self.topology.describe())


def declared_edge_apps() -> list[EdgeApp]:
    """The ``edge_apps`` of the configured pipeline (``pipeline.yaml``): adding one to the graph is an
    entry there."""
    from assets.pipeline.active import active_pipeline

    return [
        EdgeApp(ref.application_id or name, ref.target, ref.server, ref.guarantee, ref.description)
        for name, ref in active_pipeline().edge_apps.items()
    ]


EDGE_APPS: list[EdgeApp] = declared_edge_apps()


def edge_app(application_id: str) -> EdgeApp:
    for app in EDGE_APPS:
        if app.application_id == application_id:
            return app
    raise EdgeAppError(
        f"no edge app {application_id!r}; known: {', '.join(a.application_id for a in EDGE_APPS)}"
    )
