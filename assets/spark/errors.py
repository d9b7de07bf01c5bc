"""Errors raised while building a Spark session; they say what to install or configure."""

from __future__ import annotations

from edge.errors import StreamhouseError


class SparkSetupError(StreamhouseError):
    """Spark cannot start in this environment (Java missing or too old, bad configuration)."""


class JavaNotFoundError(SparkSetupError):
    """No usable `java` executable was found."""


class JavaVersionError(SparkSetupError):
    """The Java found is older than Spark 4 supports."""
