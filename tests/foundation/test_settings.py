"""Settings: env beats YAML beats defaults; every bad value fails fast naming its key."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from edge.kafka import BrokerProfile
from orchestration.settings import SettingsError, load_settings

ROOT = Path(__file__).resolve().parents[2]


def test_defaults_are_local_and_absolute(tmp_path: Path) -> None:
    settings = load_settings({}, base=tmp_path)
    # the profile follows the default broker kind (Apache Kafka where installed, else Tansu)
    expected = BrokerProfile.REAL if settings.broker_kind.value == "kafka" else BrokerProfile.EMBEDDED
    assert settings.broker_profile is expected
    assert settings.spark_master == "local[*]"
    assert settings.lake_root == tmp_path / ".state" / "lake"
    assert settings.state_dir.is_absolute() and settings.dagster_home.is_absolute()


def test_env_overrides_yaml_overrides_defaults(tmp_path: Path) -> None:
    config = tmp_path / "streamhouse.yaml"
    config.write_text(
        "spark_master: spark://yaml:7077\nlake_root: /lake/from/yaml\n"
        "kafka:\n  security.protocol: SASL_SSL\n  sasl.mechanisms: SCRAM-SHA-512\n"
        "spark_conf:\n  spark.executor.memory: 2g\n"
    )
    settings = load_settings(
        {
            "STREAMHOUSE_CONFIG": str(config),
            "STREAMHOUSE_SPARK_MASTER": "local[2]",
            "STREAMHOUSE_KAFKA__SASL_MECHANISMS": "PLAIN",
        }
    )
    assert settings.spark_master == "local[2]"
    assert settings.lake_root == Path("/lake/from/yaml")
    assert settings.kafka == {"security.protocol": "SASL_SSL", "sasl.mechanisms": "PLAIN"}
    assert settings.spark_conf == {"spark.executor.memory": "2g"}


def test_real_profile_passes_security_settings_through() -> None:
    settings = load_settings(
        {
            "STREAMHOUSE_BROKER_PROFILE": "real",
            "STREAMHOUSE_BOOTSTRAP_SERVERS": "k1:9093,k2:9093",
            "STREAMHOUSE_KAFKA__SECURITY_PROTOCOL": "SASL_SSL",
        }
    )
    consumer = settings.kafka_client().consumer("g")
    assert consumer["bootstrap.servers"] == "k1:9093,k2:9093"
    assert consumer["security.protocol"] == "SASL_SSL"
    assert "session.timeout.ms" not in consumer, "a real cluster keeps Kafka's defaults"


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"STREAMHOUSE_LAKEROOT": "/x"}, "unknown setting STREAMHOUSE_LAKEROOT"),
        ({"STREAMHOUSE_BOOTSTRAP_SERVERS": "localhost"}, "bootstrap_servers"),
        ({"STREAMHOUSE_BROKER_PROFILE": "kraft"}, "broker_profile"),
        (
            {"STREAMHOUSE_BROKER_PROFILE": "real", "STREAMHOUSE_BROKER_KIND": "tansu"},
            "broker_profile=real needs bootstrap_servers",
        ),
        ({"STREAMHOUSE_DELTA_JARS_AVAILABLE": "perhaps"}, "delta_jars_available"),
        ({"STREAMHOUSE_SPARK_MASTER": " "}, "spark_master"),
        ({"STREAMHOUSE_SPARK_CONF": "a=b"}, "STREAMHOUSE_SPARK_CONF"),
        ({"STREAMHOUSE_CONFIG": "/does/not/exist.yaml"}, "file not found"),
    ],
)
def test_bad_values_name_the_key(env: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError, match=message):
        load_settings(env)


def test_bad_yaml_is_reported_with_its_path(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("spark_master: [unclosed\n")
    with pytest.raises(SettingsError, match="not valid YAML"):
        load_settings({"STREAMHOUSE_CONFIG": str(bad)})
    typo = tmp_path / "typo.yaml"
    typo.write_text("spark_mastr: local[1]\n")
    with pytest.raises(SettingsError, match="spark_mastr"):
        load_settings({"STREAMHOUSE_CONFIG": str(typo)})


def test_no_bootstrap_servers_tells_what_to_do() -> None:
    with pytest.raises(SettingsError, match="streamhouse broker start"):
        load_settings({}).kafka_client()


def test_prerequisite_check_names_missing_java(tmp_path: Path) -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "check_prereqs.py")],
        capture_output=True,
        text=True,
        env={"PATH": str(tmp_path), "JAVA_HOME": str(tmp_path / "no-jdk")},
        timeout=30,
    )
    assert result.returncode == 1
    assert "Java 17+ is required" in result.stderr and "no-jdk" in result.stderr


def test_prerequisite_check_passes_here() -> None:
    result = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "check_prereqs.py")],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert result.returncode == 0, result.stderr


def test_non_setting_variables_are_not_unknown_settings(tmp_path: Path) -> None:
    env = {"STREAMHOUSE_DEBUG": "1", "STREAMHOUSE_TEST_BOOTSTRAP_SERVERS": "127.0.0.1:9092"}
    env["STREAMHOUSE_HOME"] = str(tmp_path)
    assert load_settings(env, base=tmp_path).lake_root == tmp_path / ".state" / "lake"


def test_relative_paths_resolve_against_the_project_home_not_the_working_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from orchestration.settings import project_home

    monkeypatch.chdir(tmp_path)
    assert project_home({}) == ROOT  # the checkout, from any directory
    assert load_settings({}).state_dir == ROOT / ".state"
    home = tmp_path / "home"
    home.mkdir()
    (home / "streamhouse.yaml").write_text("lake_root: lake\n")
    settings = load_settings({"STREAMHOUSE_HOME": str(home)})
    assert settings.lake_root == home / "lake" and settings.state_dir == home / ".state"


def test_executor_and_partitions_start_settings(tmp_path: Path) -> None:
    from datetime import date

    from dagster import in_process_executor, multiprocess_executor

    from orchestration.definitions import build_definitions

    defaults = load_settings({}, base=tmp_path)
    assert defaults.dagster_executor == "in_process" and defaults.partitions_start is None
    defs = build_definitions(defaults)
    for job in ("ingest_job", "daily_job", "maintenance_job"):
        assert defs.resolve_job_def(job).executor_def is in_process_executor
    cluster = load_settings({"STREAMHOUSE_DAGSTER_EXECUTOR": "multiprocess"}, base=tmp_path)
    assert build_definitions(cluster).resolve_job_def("daily_job").executor_def is multiprocess_executor
    with pytest.raises(SettingsError, match="dagster_executor"):
        load_settings({"STREAMHOUSE_DAGSTER_EXECUTOR": "threads"}, base=tmp_path)
    env = {"STREAMHOUSE_PARTITIONS_START": "2025-06-01"}
    assert load_settings(env, base=tmp_path).partitions_start == date(2025, 6, 1)
    out = subprocess.run(
        [sys.executable, "-c", "from orchestration.partitions import DAILY; print(DAILY.start.date())"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT), **env},
        check=True,
    )
    assert out.stdout.strip() == "2025-06-01"
