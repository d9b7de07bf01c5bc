"""The edge apps in the lineage graph: a registry of the project's apps and their observed assets."""

from assets.edge_apps.registry import EDGE_APPS, EdgeApp, edge_app

__all__ = ["EDGE_APPS", "EdgeApp", "edge_app"]
