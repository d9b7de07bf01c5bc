"""One typed settings object for the whole platform, from environment variables and an optional YAML file.

Precedence: ``STREAMHOUSE_*`` environment variables > the YAML file > defaults. The YAML file is
``$STREAMHOUSE_CONFIG`` if set, else ``streamhouse.yaml`` in the working directory, else in the project
home (``project_home()``: ``$STREAMHOUSE_HOME``, else the checkout), if present. Relative paths resolve
against the project home, so every command finds the same broker record and lake from any directory.
Where the home and the file are is decided in one place, :mod:`edge.home`, which the layers below use
for the few values they read without these settings (the lake root, the first partition).
Unknown keys are errors (a typo must not silently fall back to a default), and every error names the key.

Kafka client properties for a real cluster (SASL/TLS, client.id, ...) go under ``kafka:`` in YAML or as
``STREAMHOUSE_KAFKA__<PROPERTY>`` with dots written as single underscores
(``STREAMHOUSE_KAFKA__SASL_MECHANISMS=PLAIN`` → ``sasl.mechanisms``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from datetime import date
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    field_validator,
    model_validator,
)

from assets.spark.delta_jars import delta_jars
from edge.broker.local import BrokerKind, default_broker_kind
from edge.errors import StreamhouseError
from edge.home import CONFIG_ENV, ENV_PREFIX, HOME_ENV, config_path, project_home
from edge.kafka.profile import BrokerProfile, KafkaClientConfig, check_client_property

KAFKA_ENV_PREFIX = "STREAMHOUSE_KAFKA__"
#: A settings file is a few lines; anything this large is a wrong path (``/dev/zero`` would never end)
MAX_CONFIG_BYTES = 1024 * 1024
#: Variables that share the prefix but are not settings: the config file, the project home, binaries
#: located by other means, stack traces on errors (``STREAMHOUSE_DEBUG``) and the test suite's broker.
NON_SETTING_ENV = {
    CONFIG_ENV,
    HOME_ENV,
    "STREAMHOUSE_TANSU_BIN",
    "STREAMHOUSE_KAFKA_DIST",
    "STREAMHOUSE_DEBUG",
    "STREAMHOUSE_TEST_BOOTSTRAP_SERVERS",
}


class SettingsError(StreamhouseError):
    """A setting is unknown or malformed; the message names the key and where it came from."""


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    #: ``embedded`` (Tansu's tuned client settings) or ``real`` (Kafka's defaults, any Kafka cluster).
    #: Unset: follows ``broker_kind`` (tansu → embedded, kafka → real).
    broker_profile: BrokerProfile = BrokerProfile.EMBEDDED
    #: The local broker that `streamhouse broker start`, the demo and the UI start and share: ``kafka``
    #: (Apache Kafka from the jars `make install` resolves, topics on disk under ``state_dir``) or
    #: ``tansu`` (embedded, topics in memory only). Unset, ``load_settings`` picks kafka where its jars
    #: are installed, else tansu with a warning (``broker_fallback_warning``); a ``Settings`` built
    #: directly (tests) keeps tansu.
    broker_kind: BrokerKind = BrokerKind.TANSU
    #: Required for ``real``; for ``embedded`` it defaults to the broker recorded under ``state_dir``.
    bootstrap_servers: str | None = None
    kafka: dict[str, str] = Field(default_factory=dict)
    lake_root: Path = Path(".state/lake")
    spark_master: str = "local[*]"
    spark_conf: dict[str, str] = Field(default_factory=dict)
    #: Spark's native Delta path (delta-spark jars on the classpath). Unset: on exactly when `make install`
    #: resolved the jars into ``<state_dir>/jars/delta``; true/false set explicitly always wins.
    delta_jars_available: bool | None = None
    state_dir: Path = Path(".state")
    dagster_home: Path = Path(".state/dagster")
    #: How a Dagster run executes its steps: ``in_process`` (one process and one Spark session shared by
    #: every step of the run: what the demo does, the fastest on one machine) or ``multiprocess`` (a
    #: process, and a Spark driver, per step; steps run in parallel, for a remote ``spark_master``).
    dagster_executor: Literal["in_process", "multiprocess"] = "in_process"
    #: ``kafka_lag_sensor`` requests an ingest as soon as this many new records wait in the input topics
    #: (1: any new record, on the sensor's next 30 s tick)...
    lag_min_records: int = Field(default=1, ge=1)
    #: ...and fewer records once the first of them has waited this long (seconds).
    lag_max_wait_s: float = Field(default=300.0, gt=0, le=86_400, allow_inf_nan=False)
    #: First daily partition of silver and gold (the Dagster UI counts missing days from here). Unset:
    #: the day before the first day silver holds, on an empty lake 5 days before today
    #: (``assets.partitions.default_start``), so the UI lists no days before the data.
    partitions_start: date | None = None
    #: The pipeline the lake is built from: a folder holding ``pipeline.yaml`` (docs/pipelines.md).
    #: Unset: the demo's, ``pipelines/demo`` beside the code.
    pipeline: Path | None = None
    #: Why ``broker_kind`` fell back to tansu although unset (Apache Kafka is not installed), else None.
    _broker_kind_fallback: str | None = PrivateAttr(default=None)

    @field_validator("bootstrap_servers")
    @classmethod
    def _check_bootstrap(cls, value: str | None) -> str | None:
        if value is None:
            return None
        for server in value.split(","):
            host, sep, port = server.strip().rpartition(":")
            if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
                raise ValueError(f"expected host:port[,host:port...], got {value!r}")
        return value

    @field_validator("kafka")
    @classmethod
    def _check_kafka(cls, value: dict[str, str]) -> dict[str, str]:
        for name, prop in value.items():
            check_client_property(name, prop)
        return value

    @field_validator("spark_master")
    @classmethod
    def _check_master(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty (e.g. local[*], spark://host:7077, yarn)")
        return value

    @model_validator(mode="before")
    @classmethod
    def _profile_follows_kind(cls, data: Any) -> Any:
        if isinstance(data, dict) and data.get("broker_profile") in (None, ""):
            kind = str(data.get("broker_kind") or BrokerKind.TANSU.value).strip().lower()
            profile = BrokerProfile.REAL if kind == BrokerKind.KAFKA.value else BrokerProfile.EMBEDDED
            data = {**data, "broker_profile": profile.value}
        return data

    @model_validator(mode="after")
    def _real_needs_servers(self) -> Settings:
        local_kafka = self.broker_kind is BrokerKind.KAFKA
        if self.broker_profile is BrokerProfile.REAL and not self.bootstrap_servers and not local_kafka:
            raise ValueError(
                "broker_profile=real needs bootstrap_servers (STREAMHOUSE_BOOTSTRAP_SERVERS=host:port), "
                "or broker_kind=kafka for a local Apache Kafka"
            )
        return self

    def resolved(self, base: Path | None = None) -> Settings:
        """Paths made absolute against ``base`` (default: ``project_home()``)."""
        base = base or project_home()
        updates = {
            name: (base / getattr(self, name)).resolve()
            for name in ("lake_root", "state_dir", "dagster_home", "pipeline")
            if getattr(self, name) is not None and not getattr(self, name).is_absolute()
        }
        if self.delta_jars_available is None:
            updates["delta_jars_available"] = bool(delta_jars(updates.get("state_dir", self.state_dir)))
        return self.model_copy(update=updates)

    def broker_fallback_warning(self) -> str | None:
        """One line to print when starting the local broker of a defaulted tansu kind: its topics are
        lost on stop (then the demo finds the lake ahead of them), and what would keep them."""
        if self._broker_kind_fallback is None:
            return None
        return (
            f"warning: {self._broker_kind_fallback}; falling back to the embedded Tansu broker, whose "
            "topics live in memory only (`streamhouse broker stop` loses them; set broker_kind: tansu "
            "to choose it and silence this)"
        )

    def native_delta(self) -> bool:
        """`delta_jars_available` with the default applied (also before `resolved()`)."""
        if self.delta_jars_available is None:
            return bool(delta_jars(self.state_dir))
        return self.delta_jars_available

    def spark_delta_jars(self) -> list[str]:
        """The resolved jars to put on Spark's classpath when the native Delta path is on."""
        return [str(p) for p in delta_jars(self.state_dir)] if self.native_delta() else []

    def kafka_client(self, bootstrap_servers: str | None = None) -> KafkaClientConfig:
        """Client config: the given servers, else the configured ones, else the recorded local broker."""
        servers = bootstrap_servers or self.bootstrap_servers
        local = self.broker_profile is BrokerProfile.EMBEDDED or self.broker_kind is BrokerKind.KAFKA
        if not servers and local:
            from edge.broker.embedded import broker_status

            info, alive = broker_status(self.state_dir)
            if info is not None and alive and info.kind != self.broker_kind.value:
                raise SettingsError(
                    f"the recorded broker at {info.bootstrap_servers} is {info.kind} but broker_kind is "
                    f"{self.broker_kind.value}; stop it (`streamhouse broker stop`) or set "
                    f"STREAMHOUSE_BROKER_KIND={info.kind}"
                )
            servers = info.bootstrap_servers if info is not None and alive else None
        if not servers:
            kind = " --kind kafka" if self.broker_kind is BrokerKind.KAFKA else ""
            raise SettingsError(
                f"no Kafka bootstrap servers: start the local broker (`streamhouse broker start{kind}`), "
                "pass --bootstrap-servers or set STREAMHOUSE_BOOTSTRAP_SERVERS"
            )
        return KafkaClientConfig(servers, self.broker_profile, dict(self.kafka))


def _env_settings(environ: Mapping[str, str]) -> dict[str, Any]:
    fields = set(Settings.model_fields)
    values: dict[str, Any] = {}
    kafka: dict[str, str] = {}
    for name, raw in environ.items():
        if not name.startswith(ENV_PREFIX) or name in NON_SETTING_ENV:
            continue
        try:
            raw.encode("utf-8")
        except UnicodeEncodeError:
            shown = raw.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
            raise SettingsError(f"{name}={shown!r}: not valid UTF-8") from None
        if name.startswith(KAFKA_ENV_PREFIX):
            prop = name[len(KAFKA_ENV_PREFIX) :].lower().replace("_", ".")
            if not prop:
                raise SettingsError(f"{name}: missing the Kafka property name after the prefix")
            kafka[prop] = raw
            continue
        key = name[len(ENV_PREFIX) :].lower()
        if key not in fields or key == "kafka":
            known = ", ".join(ENV_PREFIX + f.upper() for f in sorted(fields - {"kafka", "spark_conf"}))
            raise SettingsError(f"unknown setting {name}; known: {known}, {KAFKA_ENV_PREFIX}<PROPERTY>")
        if key == "spark_conf":
            raise SettingsError(f"{name}: set spark_conf in the YAML file, not the environment")
        values[key] = raw
    if kafka:
        values["kafka"] = kafka
    return values


def _file_settings(path: Path) -> dict[str, Any]:
    try:
        if not path.is_file():
            what = "not a regular file" if path.exists() else "file not found"
            raise SettingsError(f"{CONFIG_ENV}={path}: {what}")
        with path.open("rb") as handle:
            text = handle.read(MAX_CONFIG_BYTES + 1)
        if len(text) > MAX_CONFIG_BYTES:
            raise SettingsError(f"{path}: larger than {MAX_CONFIG_BYTES // 1024} KiB; is it a settings file?")
        data = yaml.safe_load(text.decode("utf-8"))
    except OSError as exc:
        raise SettingsError(f"{path}: cannot read it: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise SettingsError(f"{path}: not UTF-8 text") from None
    except yaml.YAMLError as exc:
        raise SettingsError(f"{path}: not valid YAML: {exc}") from exc
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise SettingsError(f"{path}: expected a mapping of settings at the top level")
    for section in ("kafka", "spark_conf"):
        if isinstance(data.get(section), dict):
            data[section] = {str(k): str(v) for k, v in data[section].items()}
    return data


def load_settings(
    environ: Mapping[str, str] | None = None, config_file: Path | None = None, base: Path | None = None
) -> Settings:
    environ = os.environ if environ is None else environ
    source = "defaults"
    raw: dict[str, Any] = {}
    path = config_file or config_path(environ, home=base)
    if path is not None:
        raw.update(_file_settings(path))
        source = str(path)
    env_values = _env_settings(environ)
    if env_values:
        if "kafka" in env_values and isinstance(raw.get("kafka"), dict):
            env_values["kafka"] = {**raw["kafka"], **env_values["kafka"]}
        raw.update(env_values)
        source = f"environment and {source}"
    home = base or project_home(environ)
    fallback: str | None = None
    if raw.get("broker_kind") in (None, ""):
        state_dir = Path(str(raw.get("state_dir") or Settings.model_fields["state_dir"].default))
        kind, fallback = default_broker_kind(state_dir if state_dir.is_absolute() else home / state_dir)
        raw["broker_kind"] = kind.value
    try:
        settings = Settings(**raw)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'settings'}: {err['msg']}" for err in exc.errors()
        )
        raise SettingsError(f"invalid settings (from {source}): {problems}") from None
    settings._broker_kind_fallback = fallback
    return settings.resolved(home)
