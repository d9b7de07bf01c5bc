"""`delta_jars_available`: on by default exactly where `make install` resolved the jars; explicit wins."""

from __future__ import annotations

from pathlib import Path

from assets.spark.delta_jars import delta_jars, unavailable_reason
from orchestration.resources import build_resources
from orchestration.settings import load_settings


def _fake_jars(state: Path) -> None:
    jars = state / "jars" / "delta"
    jars.mkdir(parents=True)
    (jars / "delta-spark_4.2_2.13-4.4.0.jar").write_bytes(b"")
    (jars / "delta-storage-4.4.0.jar").write_bytes(b"")
    (jars / ".resolved").write_text("hash\n")


def test_default_follows_the_resolved_jars(tmp_path: Path) -> None:
    env = {"STREAMHOUSE_STATE_DIR": str(tmp_path)}
    without = load_settings(env, base=tmp_path)
    assert without.delta_jars_available is False and without.spark_delta_jars() == []
    assert "make install" in (unavailable_reason(tmp_path) or "")

    _fake_jars(tmp_path)
    with_jars = load_settings(env, base=tmp_path)
    assert with_jars.delta_jars_available is True
    assert [Path(j).name for j in with_jars.spark_delta_jars()] == [p.name for p in delta_jars(tmp_path)]
    spark = build_resources(with_jars)["pyspark"]
    assert spark.delta_jars_available and len(spark.delta_jars) == 2


def test_an_explicit_setting_wins(tmp_path: Path) -> None:
    _fake_jars(tmp_path)
    off = load_settings({"STREAMHOUSE_STATE_DIR": str(tmp_path), "STREAMHOUSE_DELTA_JARS_AVAILABLE": "false"})
    assert off.delta_jars_available is False and off.spark_delta_jars() == []
    assert build_resources(off)["pyspark"].delta_jars == []
    empty = tmp_path / "elsewhere"
    on = load_settings({"STREAMHOUSE_STATE_DIR": str(empty), "STREAMHOUSE_DELTA_JARS_AVAILABLE": "true"})
    assert on.delta_jars_available is True and on.spark_delta_jars() == []  # jars on the classpath already


def test_a_recorded_maven_failure_is_the_reason(tmp_path: Path) -> None:
    marker = tmp_path / "jars" / "delta" / "UNAVAILABLE"
    marker.parent.mkdir(parents=True)
    marker.write_text("Maven could not resolve the delta-spark jars\n[ERROR] Unknown host\n")
    assert unavailable_reason(tmp_path).startswith("Maven could not resolve")
    assert delta_jars(tmp_path) == []
