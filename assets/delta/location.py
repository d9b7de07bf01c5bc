"""Where a table lives, as seen by deltalake, pyarrow and Spark.

The three libraries spell locations differently (`/x`, `file:///x`, `s3://b/x` vs `s3a://b/x`); this
module is the single place that translates, so staging/moving/reading agree on every path.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from urllib.parse import urlparse

from pyarrow import fs as pafs

from assets.delta.errors import WriteOptionsError

_SPARK_SCHEMES = {"s3": "s3a", "gs": "gs", "abfss": "abfss", "hdfs": "hdfs"}


@dataclass(frozen=True)
class TableLocation:
    uri: str  # handed to deltalake
    filesystem: pafs.FileSystem
    root: str  # table root inside `filesystem`
    spark_root: str  # table root as a Spark/Hadoop URI

    def fs_path(self, rel_path: str) -> str:
        return f"{self.root}/{rel_path}" if rel_path else self.root

    def spark_path(self, rel_path: str) -> str:
        return f"{self.spark_root}/{rel_path}" if rel_path else self.spark_root

    @property
    def log_dir(self) -> str:
        return self.fs_path("_delta_log")


def resolve(table_uri: str | os.PathLike[str]) -> TableLocation:
    text = os.fspath(table_uri)
    parsed = urlparse(text)
    if parsed.scheme in ("", "file") or (len(parsed.scheme) == 1 and os.name == "nt"):
        local = parsed.path if parsed.scheme == "file" else text
        root = os.path.abspath(os.path.expanduser(local)).rstrip("/") or "/"
        return TableLocation(
            uri=root, filesystem=pafs.LocalFileSystem(), root=root, spark_root=f"file://{root}"
        )
    if parsed.scheme not in _SPARK_SCHEMES and parsed.scheme != "s3a":
        raise WriteOptionsError(
            f"Unsupported table location {text!r}: use a local path or one of {sorted(_SPARK_SCHEMES)} URIs.",
            table_uri=text,
        )
    fs_uri = text.replace("s3a://", "s3://", 1)
    filesystem, root = pafs.FileSystem.from_uri(fs_uri)
    spark_scheme = _SPARK_SCHEMES.get(parsed.scheme, parsed.scheme)
    spark_root = spark_scheme + text[len(parsed.scheme) :]
    return TableLocation(
        uri=fs_uri.rstrip("/"),
        filesystem=filesystem,
        root=root.rstrip("/"),
        spark_root=spark_root.rstrip("/"),
    )
