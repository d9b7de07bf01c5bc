"""Dagster resources the assets take: Kafka, the lake location and Spark.

They live here, below ``orchestration/``, so the asset modules can name their resource types without
importing the layer that builds them: ``orchestration/resources.py`` constructs them from ``Settings``
and may re-export them, but nothing in ``assets/`` reads settings.

Spark comes from dagster-pyspark's ``PySparkResource`` (one session per run process). Our subclass
starts it through ``build_spark_session`` so the session gets the same defaults everywhere (UTC session
time zone, microsecond Parquet timestamps, ...) and any ``spark.master`` works by configuration.
``ExistingSparkResource`` hands out an already running session instead (tests, notebooks), so a run
never starts a second JVM next to one that is already there.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from dagster import ConfigurableResource, InitResourceContext
from dagster_pyspark import PySparkResource
from pydantic import Field

from edge.errors import StreamhouseError
from edge.kafka import BrokerProfile, KafkaClientConfig

#: What ``build_spark_session`` sets and the lakehouse relies on; repeated in the resource config so it
#: is visible in the Dagster UI and survives a session created outside ``build_spark_session``.
LAKEHOUSE_SPARK_DEFAULTS: dict[str, str] = {
    "spark.sql.session.timeZone": "UTC",
    "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
    "spark.sql.sources.partitionOverwriteMode": "static",
    "spark.sql.execution.arrow.pyspark.enabled": "true",
    "spark.sql.execution.arrow.pyspark.fallback.enabled": "false",
    "spark.app.name": "streamhouse-lakehouse",
}


class ResourceError(StreamhouseError):
    pass


class KafkaResource(ConfigurableResource):
    """Where the edge topics live. ``topic_prefix`` namespaces the logical topic names (tests, tenants)."""

    bootstrap_servers: str = Field(
        default="", description="host:port[,...]; empty = the recorded local broker"
    )
    profile: str = Field(default=BrokerProfile.EMBEDDED.value, description="embedded | real")
    extra: dict[str, str] = Field(default_factory=dict, description="librdkafka properties for every client")
    topic_prefix: str = ""
    state_dir: str = Field(default=".state", description="where the local broker is recorded")

    def client(self) -> KafkaClientConfig:
        servers = self.bootstrap_servers
        if not servers:
            from edge.broker.embedded import read_record

            info = read_record(Path(self.state_dir))
            if info is None:
                raise ResourceError(
                    f"no local broker is recorded under {self.state_dir} and KafkaResource has no "
                    "bootstrap_servers: start it with `streamhouse broker start`, or set "
                    "STREAMHOUSE_BOOTSTRAP_SERVERS"
                )
            servers = info.bootstrap_servers
        return KafkaClientConfig(servers, BrokerProfile(self.profile), dict(self.extra))

    def topic(self, logical: str) -> str:
        return f"{self.topic_prefix}{logical}"


class LakeResource(ConfigurableResource):
    """The lake root; tables live at ``<lake_root>/<layer>/<name>``."""

    lake_root: str

    def table_uri(self, layer: str, name: str) -> str:
        from assets.lake.layout import table_uri

        return table_uri(self.lake_root, layer, name)

    @property
    def plots_dir(self) -> Path:
        return Path(self.lake_root) / "_plots"


def _flatten(conf: dict[str, Any], prefix: str = "") -> dict[str, str]:
    flat: dict[str, str] = {}
    for key, value in conf.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(_flatten(value, f"{name}."))
        else:
            flat[name] = str(value).lower() if isinstance(value, bool) else str(value)
    return flat


class LakehouseSparkResource(PySparkResource):
    """dagster-pyspark's resource, but the session is made by ``build_spark_session``.

    ``spark_config`` is a flat (or nested) Spark conf; ``spark.master`` picks local or a cluster.
    """

    delta_jars_available: bool = False
    #: delta-spark jars to put on the classpath (``Settings.spark_delta_jars()``).
    delta_jars: list[str] = Field(default_factory=list)

    def setup_for_execution(self, context: InitResourceContext) -> None:
        from assets.spark.session import build_spark_session

        conf = _flatten(dict(self.spark_config))
        master = conf.pop("spark.master", "local[*]")
        app_name = conf.pop("spark.app.name", "streamhouse-lakehouse")
        self._spark_session = build_spark_session(
            master,
            app_name=app_name,
            extra_conf=conf,
            delta_jars_available=self.delta_jars_available,
            delta_jars=self.delta_jars,
        )


class ExistingSparkResource(PySparkResource):
    """Uses the SparkSession already running in this process (the test suite's shared session)."""

    spark_config: dict[str, Any] = Field(default_factory=dict)

    def setup_for_execution(self, context: InitResourceContext) -> None:
        from pyspark.sql import SparkSession

        session = SparkSession.getActiveSession() or SparkSession._instantiatedSession
        if session is None:
            raise ResourceError("ExistingSparkResource: no SparkSession is running in this process")
        for key in ("spark.sql.session.timeZone", "spark.sql.parquet.outputTimestampType"):
            session.conf.set(key, LAKEHOUSE_SPARK_DEFAULTS[key])
        self._spark_session = session
