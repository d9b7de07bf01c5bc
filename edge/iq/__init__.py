"""Interactive queries: every StreamsApp instance serves its stores (and /metrics) over HTTP."""

from edge.iq.server import QueryServer

__all__ = ["QueryServer"]
