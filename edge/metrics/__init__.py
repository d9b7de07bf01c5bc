"""Prometheus text exposition for the edge runtime (no client library needed)."""

from edge.metrics.prometheus import MetricFamily, render

__all__ = ["MetricFamily", "render"]
