"""Where `make install` puts the delta-spark jars (``scripts/delta_jars.py``), and whether it could.

Layout: ``<state dir>/jars/delta/*.jar`` plus ``.resolved`` after a successful Maven resolution, or
``UNAVAILABLE`` holding the reason when Maven could not fetch them.
"""

from __future__ import annotations

import os
from pathlib import Path

JARS_SUBDIR = Path("jars") / "delta"
#: The Maven artifact whose jar carries Delta's Spark classes (version from jvm/delta/pom.xml).
DELTA_SPARK_JAR_PREFIX = "delta-spark_"
#: Runtime Spark setting the Delta layer reads to choose native Delta ("true") or Parquet + deltalake.
NATIVE_DELTA_CONF = "spark.streamhouse.delta.native"
#: Spark settings that turn on native Delta in a session whose classpath has the jars.
DELTA_SESSION_CONF = {
    "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
    "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
}


def jars_dir(state_dir: str | os.PathLike[str]) -> Path:
    return Path(state_dir) / JARS_SUBDIR


def delta_jars(state_dir: str | os.PathLike[str]) -> list[Path]:
    """The resolved jars (absolute, sorted), or [] when `make install` did not (or could not) get them."""
    directory = jars_dir(state_dir)
    if not (directory / ".resolved").is_file():
        return []
    jars = sorted(p.resolve() for p in directory.glob("*.jar"))
    return jars if any(p.name.startswith(DELTA_SPARK_JAR_PREFIX) for p in jars) else []


def unavailable_reason(state_dir: str | os.PathLike[str]) -> str | None:
    """Why there are no jars (None when they are there)."""
    if delta_jars(state_dir):
        return None
    marker = jars_dir(state_dir) / "UNAVAILABLE"
    if marker.is_file():
        return marker.read_text().strip()
    return f"no delta-spark jars under {jars_dir(state_dir)}: `make install` resolves them with Maven"
