"""Spark session construction for the lakehouse."""

from assets.spark.errors import JavaNotFoundError, JavaVersionError, SparkSetupError
from assets.spark.session import build_spark_session, check_java

__all__ = ["JavaNotFoundError", "JavaVersionError", "SparkSetupError", "build_spark_session", "check_java"]
