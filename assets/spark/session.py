"""Builds the one SparkSession the lakehouse uses, locally or on a cluster.

Local and cluster sessions differ only by configuration (`master` plus `extra_conf`), so code paths
tested against `local[2]` are the ones that run in production. Java is checked *before* the JVM is
started because PySpark's own failure ("Java gateway process exited") does not say what to fix.
"""

from __future__ import annotations

import contextlib
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING

from assets.spark.delta_jars import DELTA_SESSION_CONF, NATIVE_DELTA_CONF
from assets.spark.errors import JavaNotFoundError, JavaVersionError, SparkSetupError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

MIN_JAVA_MAJOR = 17
DEFAULT_APP_NAME = "streamhouse"
LOCAL_SHUFFLE_PARTITIONS = 4
DEFAULT_DRIVER_MEMORY = "2g"
#: how long the JVM and Python wait for each other on the local sockets of collect() & co. (Spark: 15 s)
SOCKET_TIMEOUT_S = 120
#: The driver's log4j2 configuration: Spark's defaults at WARN without the start-up noise of every run
#: (see the file); a ``spark.driver.extraJavaOptions`` naming another configuration wins.
LOG4J2_CONFIG = Path(__file__).with_name("log4j2.properties")

_VERSION_RE = re.compile(r'version "(?P<version>[^"]+)"')


def _java_executable() -> str:
    java_home = os.environ.get("JAVA_HOME")
    if java_home:
        candidate = Path(java_home) / "bin" / "java"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
        raise JavaNotFoundError(
            f"JAVA_HOME is set to {java_home!r} but {candidate} is not an executable. "
            f"Point JAVA_HOME at a Java {MIN_JAVA_MAJOR}+ installation or unset it to use `java` from PATH."
        )
    found = shutil.which("java")
    if found is None:
        raise JavaNotFoundError(
            f"Spark needs Java {MIN_JAVA_MAJOR}+ but no `java` is on PATH and JAVA_HOME is not set. "
            f"Install a JDK {MIN_JAVA_MAJOR}+ (e.g. `apt-get install openjdk-17-jre-headless`) "
            "or set JAVA_HOME."
        )
    return found


#: What the JVM prints at start-up for Spark 4's ``--add-modules=jdk.incubator.vector`` (its launcher
#: always adds it; no JVM flag silences the module system's warning).
INCUBATOR_WARNING = b"WARNING: Using incubator modules: jdk.incubator.vector"


def _forward_stderr(pipe: IO[bytes]) -> None:
    """Copy the JVM's stderr to ours line by line, without the incubator warning (to file descriptor 2,
    wherever it points at the time: a silenced demo silences the JVM too)."""
    for line in iter(pipe.readline, b""):
        if line.rstrip(b"\r\n") != INCUBATOR_WARNING:
            with contextlib.suppress(OSError):
                os.write(2, line)


def _launch_gateway_without_incubator_warning(conf: Mapping[str, str]) -> None:
    """Start PySpark's JVM ourselves, its stderr through ``_forward_stderr``, so the first line a user
    saw from every Spark start (the demo, `streamhouse check`) was not a JVM warning about a module
    Spark chose. A gateway that runs already (a session was built before, or ``PYSPARK_GATEWAY_PORT``
    names one) is left as it is; ``getOrCreate()`` then starts the SparkContext on this gateway."""
    from pyspark import SparkConf, SparkContext
    from pyspark.java_gateway import launch_gateway

    if SparkContext._gateway is not None or "PYSPARK_GATEWAY_PORT" in os.environ:
        return
    spark_conf = SparkConf(loadDefaults=False)
    for key, value in conf.items():
        spark_conf.set(key, value)
    popen_kwargs: dict[str, object] = {"stderr": subprocess.PIPE}
    gateway = launch_gateway(spark_conf, popen_kwargs=popen_kwargs)
    process = gateway.proc
    if process is not None and process.stderr is not None:
        threading.Thread(
            target=_forward_stderr, args=(process.stderr,), name="spark-jvm-stderr", daemon=True
        ).start()
    SparkContext._ensure_initialized(gateway=gateway)


def parse_java_major(version_output: str) -> int | None:
    """Extract the major version from `java -version` output (handles both `1.8.0_x` and `17.0.2`)."""
    match = _VERSION_RE.search(version_output)
    if match is None:
        return None
    parts = re.split(r"[.\-+_]", match.group("version"))
    try:
        major = int(parts[0])
        if major == 1 and len(parts) > 1:
            major = int(parts[1])
    except ValueError:
        return None
    return major


def check_java(min_major: int = MIN_JAVA_MAJOR) -> int:
    """Return the Java major version, or raise an error saying how to get a usable Java."""
    java = _java_executable()
    try:
        proc = subprocess.run([java, "-version"], capture_output=True, text=True, timeout=30, check=False)
    except OSError as exc:
        raise JavaNotFoundError(
            f"Could not run {java} -version ({exc}); install a JDK {min_major}+."
        ) from exc
    output = proc.stderr + proc.stdout
    major = parse_java_major(output)
    if major is None:
        raise JavaNotFoundError(
            f"Could not determine the Java version from `{java} -version` (output: {output.strip()!r}). "
            f"Make sure JAVA_HOME/PATH point at a JDK {min_major}+."
        )
    if major < min_major:
        raise JavaVersionError(
            f"Spark 4 needs Java {min_major}+ but {java} is Java {major}. "
            f"Install a JDK {min_major}+ and point JAVA_HOME at it."
        )
    return major


def build_spark_session(
    master: str = "local[*]",
    app_name: str = DEFAULT_APP_NAME,
    ui_enabled: bool = False,
    extra_conf: Mapping[str, str] | None = None,
    delta_jars_available: bool = False,
    delta_jars: Sequence[str | os.PathLike[str]] = (),
) -> SparkSession:
    """Create (or return the active) SparkSession configured for the lakehouse.

    `extra_conf` wins over every default, so a cluster deployment can override memory, shuffle
    partitions or anything else purely by configuration (a `spark.jars` there is kept, with
    `delta_jars` added to it).

    `delta_jars` (the jars `make install` resolved, `assets.spark.delta_jars`) go on the classpath
    (`spark.jars`, shipped to executors too) together with Delta's SQL extension and catalog.
    `delta_jars_available` switches the Delta layer (`assets.delta`) to Spark's native Delta for the
    reads and writes where that is the faster path (`spark.streamhouse.delta.native`, a runtime
    setting: see `assets.delta.native`); without jars given here it means they are already on the
    classpath by other means. Nothing is ever downloaded at session start.
    """
    check_java()
    # Executors must run the same interpreter as the driver or pickled UDFs break.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    os.environ.setdefault("SPARK_AUTH_SOCKET_TIMEOUT", str(SOCKET_TIMEOUT_S))

    from pyspark.sql import SparkSession

    is_local = master.startswith("local")
    if is_local:
        # A local driver binds to loopback (spark.driver.bindAddress below); without this Spark still
        # looks for a non-loopback address first and warns twice ("Your hostname ... resolves to a
        # loopback address", "Set SPARK_LOCAL_IP") on every start, on most laptops and CI machines.
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    conf: dict[str, str] = {
        "spark.sql.session.timeZone": "UTC",
        "spark.sql.parquet.outputTimestampType": "TIMESTAMP_MICROS",
        "spark.ui.enabled": "true" if ui_enabled else "false",
        "spark.driver.memory": DEFAULT_DRIVER_MEMORY,
        "spark.sql.sources.partitionOverwriteMode": "static",
        # The Delta layer writes Parquet then commits; Spark's _SUCCESS markers would just be noise.
        "spark.hadoop.mapreduce.fileoutputcommitter.marksuccessfuljobs": "false",
        "spark.hadoop.parquet.enable.summary-metadata": "false",
        "spark.sql.parquet.compression.codec": "snappy",
        # collect() and createDataFrame() hand data over a local socket the JVM opens for 15 s by default;
        # on a busy 2-core machine (a broker, edge apps and Spark at once) a CI run saw it close first
        # ("Connection reset by peer"). The Python side's wait is SPARK_AUTH_SOCKET_TIMEOUT, set below.
        "spark.python.authenticate.socketTimeout": f"{SOCKET_TIMEOUT_S}s",
    }
    if is_local:
        conf.update(
            {
                "spark.sql.shuffle.partitions": str(LOCAL_SHUFFLE_PARTITIONS),
                "spark.default.parallelism": str(LOCAL_SHUFFLE_PARTITIONS),
                "spark.sql.adaptive.coalescePartitions.initialPartitionNum": str(LOCAL_SHUFFLE_PARTITIONS),
                "spark.driver.bindAddress": "127.0.0.1",
                "spark.driver.host": "127.0.0.1",
                "spark.sql.warehouse.dir": str(
                    Path(os.environ.get("TMPDIR", "/tmp")) / "streamhouse-warehouse"
                ),
            }
        )
    if delta_jars_available or delta_jars:
        conf.update(DELTA_SESSION_CONF)
        if is_local:
            # Delta rebuilds a table's file list (every overwrite/replaceWhere) with a Spark job of 50
            # tasks by default; on a few local cores that dominated a 100k-row overwrite (~4x slower).
            conf["spark.databricks.delta.snapshotPartitions"] = str(LOCAL_SHUFFLE_PARTITIONS)
    extra = dict(extra_conf or {})
    java_options = extra.pop("spark.driver.extraJavaOptions", "")
    if "log4j2.configurationFile" not in java_options and "log4j.configurationFile" not in java_options:
        java_options = f"{java_options} -Dlog4j2.configurationFile={LOG4J2_CONFIG.as_uri()}".strip()
    conf["spark.driver.extraJavaOptions"] = java_options
    if delta_jars:
        jars = [str(Path(j).resolve()) for j in delta_jars]
        conf["spark.jars"] = ",".join([*filter(None, [extra.pop("spark.jars", "")]), *jars])
    conf.update(extra)

    builder = SparkSession.builder.master(master).appName(app_name)
    for key, value in conf.items():
        builder = builder.config(key, value)
    _launch_gateway_without_incubator_warning({"spark.master": master, "spark.app.name": app_name, **conf})
    spark = builder.getOrCreate()
    # getOrCreate() returns an existing session untouched for static confs; apply runtime ones anyway.
    for key in ("spark.sql.session.timeZone", "spark.sql.parquet.outputTimestampType"):
        spark.conf.set(key, conf[key])
    if delta_jars_available and DELTA_SESSION_CONF["spark.sql.extensions"] not in (
        spark.conf.get("spark.sql.extensions", "") or ""
    ):
        raise SparkSetupError(
            "delta_jars_available is set but the running SparkSession was started without Delta's SQL "
            "extension (getOrCreate() returned a session created elsewhere); stop it first or set "
            "delta_jars_available: false."
        )
    spark.conf.set(NATIVE_DELTA_CONF, "true" if delta_jars_available else "false")
    return spark
