"""One typed settings object for the whole platform, from environment variables and an optional YAML file.

Precedence: ``STREAMHOUSE_*`` environment variables > the YAML file > defaults. The YAML file is
``$STREAMHOUSE_CONFIG`` if set, else ``streamhouse.yaml`` in the working directory if present. Unknown
keys are errors (a typo must not silently fall back to a default), and every error names the key.

Kafka client properties for a real cluster (SASL/TLS, client.id, ...) go under ``kafka:`` in YAML or as
``STREAMHOUSE_KAFKA__<PROPERTY>`` with dots written as single underscores
(``STREAMHOUSE_KAFKA__SASL_MECHANISMS=PLAIN`` → ``sasl.mechanisms``).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from edge.errors import StreamhouseError
from edge.kafka.profile import BrokerProfile, KafkaClientConfig

ENV_PREFIX = "STREAMHOUSE_"
CONFIG_ENV = "STREAMHOUSE_CONFIG"
DEFAULT_CONFIG_FILE = "streamhouse.yaml"
KAFKA_ENV_PREFIX = "STREAMHOUSE_KAFKA__"
#: Variables that share the prefix but are not settings.
NON_SETTING_ENV = {CONFIG_ENV, "STREAMHOUSE_TANSU_BIN"}


class SettingsError(StreamhouseError):
    """A setting is unknown or malformed; the message names the key and where it came from."""


class Settings(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    #: ``embedded`` (the Tansu broker this project starts) or ``real`` (any Kafka cluster).
    broker_profile: BrokerProfile = BrokerProfile.EMBEDDED
    #: Required for ``real``; for ``embedded`` it defaults to the broker recorded under ``state_dir``.
    bootstrap_servers: str | None = None
    kafka: dict[str, str] = Field(default_factory=dict)
    lake_root: Path = Path(".state/lake")
    spark_master: str = "local[*]"
    spark_conf: dict[str, str] = Field(default_factory=dict)
    #: True only where the delta-spark jars are on Spark's classpath; enables Spark's native Delta path.
    delta_jars_available: bool = False
    state_dir: Path = Path(".state")
    dagster_home: Path = Path(".state/dagster")

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

    @field_validator("spark_master")
    @classmethod
    def _check_master(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty (e.g. local[*], spark://host:7077, yarn)")
        return value

    @model_validator(mode="after")
    def _real_needs_servers(self) -> Settings:
        if self.broker_profile is BrokerProfile.REAL and not self.bootstrap_servers:
            raise ValueError(
                "broker_profile=real needs bootstrap_servers (STREAMHOUSE_BOOTSTRAP_SERVERS=host:port)"
            )
        return self

    def resolved(self, base: Path | None = None) -> Settings:
        """Paths made absolute against ``base`` (default: the working directory)."""
        base = base or Path.cwd()
        updates = {
            name: (base / getattr(self, name)).resolve()
            for name in ("lake_root", "state_dir", "dagster_home")
            if not getattr(self, name).is_absolute()
        }
        return self.model_copy(update=updates)

    def kafka_client(self, bootstrap_servers: str | None = None) -> KafkaClientConfig:
        """Client config: the given servers, else the configured ones, else the recorded embedded broker."""
        servers = bootstrap_servers or self.bootstrap_servers
        if not servers and self.broker_profile is BrokerProfile.EMBEDDED:
            from edge.broker.embedded import broker_status

            info, alive = broker_status(self.state_dir)
            servers = info.bootstrap_servers if info is not None and alive else None
        if not servers:
            raise SettingsError(
                "no Kafka bootstrap servers: start the embedded broker (`streamhouse broker start`), "
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
        data = yaml.safe_load(path.read_text())
    except FileNotFoundError as exc:
        raise SettingsError(f"{CONFIG_ENV}={path}: file not found") from exc
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
    path = config_file or (Path(environ[CONFIG_ENV]) if environ.get(CONFIG_ENV) else None)
    if path is None and Path(DEFAULT_CONFIG_FILE).is_file():
        path = Path(DEFAULT_CONFIG_FILE)
    if path is not None:
        raw.update(_file_settings(path))
        source = str(path)
    env_values = _env_settings(environ)
    if env_values:
        if "kafka" in env_values and isinstance(raw.get("kafka"), dict):
            env_values["kafka"] = {**raw["kafka"], **env_values["kafka"]}
        raw.update(env_values)
        source = f"environment and {source}"
    try:
        settings = Settings(**raw)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'settings'}: {err['msg']}" for err in exc.errors()
        )
        raise SettingsError(f"invalid settings (from {source}): {problems}") from None
    return settings.resolved(base)
