"""Every Delta table under the lake root, by name (`gold.revenue_tumbling_5m`), and what is known about it.

Tables live at `<lake_root>/<layer>/<table>` (a directory with a `_delta_log`); the name analysts use is
`<layer>.<table>`. Everything here reads the Delta log only, never a data file, so listing and describing
a lake costs the same whatever its size.
"""

from __future__ import annotations

import difflib
import json
import os
import posixpath
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from deltalake import DeltaTable
from pyarrow import fs as pafs

from assets.delta.location import TableLocation, resolve
from assets.delta.snapshot import active_files, open_table, partition_columns, schema_json
from assets.lake.errors import UnknownTableError, VersionOutOfRangeError
from assets.lake.glossary import table_doc
from assets.lake.layout import table_uri
from edge.home import config_value, resolve_path

DEFAULT_LAKE_ROOT = ".state/lake"
#: Keys of a commit's metadata that may carry the Dagster run that wrote it.
RUN_ID_KEYS = ("dagster.run_id", "streamhouse.dagsterRunId", "streamhouse.run_id", "dagster/run_id")


def default_lake_root() -> str:
    """The lake root as the platform settings resolve it: `STREAMHOUSE_LAKE_ROOT`, else `lake_root` in
    the settings file (`$STREAMHOUSE_CONFIG`, `./streamhouse.yaml` or the project home's), else
    `.state/lake`; a relative path is resolved against the project home, not the working directory
    (`edge.home`: notebooks cannot import `orchestration`, and must find the same lake as the CLI).
    A URI (`s3://...`) is returned as given."""
    value = config_value("lake_root")
    root = str(value) if value else DEFAULT_LAKE_ROOT
    return root if "://" in root else str(resolve_path(root))


@dataclass(frozen=True)
class TableRef:
    name: str  # layer.table
    layer: str
    table: str
    uri: str


@dataclass
class Lake:
    """The tables found under one lake root."""

    root: str
    tables: dict[str, TableRef] = field(default_factory=dict)

    def get(self, name: str) -> TableRef:
        """The table called `name` (`gold.x`, `gold/x` or `"gold"."x"`), or an UnknownTableError naming
        the closest existing tables."""
        key = name.replace('"', "").replace("`", "").strip().replace("/", ".")
        if key in self.tables:
            return self.tables[key]
        raise unknown_table(name, self)

    def names(self) -> list[str]:
        return sorted(self.tables)


def unknown_table(name: str, lake: Lake) -> UnknownTableError:
    names = lake.names()
    close = difflib.get_close_matches(name, names, n=3, cutoff=0.5)
    if not close and "." in name:  # a typo in the layer: match on the table part
        table = name.split(".", 1)[1]
        close = [n for n in names if difflib.get_close_matches(table, [n.split(".", 1)[1]], cutoff=0.6)][:3]
    hint = f"; did you mean {' or '.join(close)}?" if close else ""
    listing = (
        f" (tables: {', '.join(names[:12])}{', ...' if len(names) > 12 else ''})"
        if not close and names
        else ""
    )
    where = f" under {lake.root}" if not names else ""
    return UnknownTableError(
        f"unknown table {name}{hint}{listing}{where}".rstrip()
        + ("" if names else " (no Delta tables there: set STREAMHOUSE_LAKE_ROOT or run the pipeline)"),
        name=name,
        suggestions=tuple(close),
    )


def discover(lake_root: str | os.PathLike[str] | None = None) -> Lake:
    """Every `<layer>/<table>` directory with a `_delta_log` under the lake root (names starting with
    `_` or `.`, such as `_plots` or `_staging`, are not tables)."""
    location = resolve(lake_root if lake_root is not None else default_lake_root())
    fs = location.filesystem
    lake = Lake(location.uri)
    for layer in _dirs(fs, location.root):
        for table in _dirs(fs, layer.path):
            log = fs.get_file_info(posixpath.join(table.path, "_delta_log"))
            if log.type != pafs.FileType.Directory:
                continue
            layer_name, table_name = layer.base_name, table.base_name
            uri = table_uri(location.uri, layer_name, table_name)
            name = f"{layer_name}.{table_name}"
            lake.tables[name] = TableRef(name, layer_name, table_name, uri)
    return lake


def _dirs(fs: pafs.FileSystem, path: str) -> list[pafs.FileInfo]:
    infos = fs.get_file_info(pafs.FileSelector(path, allow_not_found=True))
    return sorted(
        (i for i in infos if i.type == pafs.FileType.Directory and not i.base_name.startswith(("_", "."))),
        key=lambda i: i.base_name,
    )


# --------------------------------------------------------------------------------------- versions


def version_range(ref: TableRef) -> tuple[int, int]:
    """(first version still in the log, latest version)."""
    location = resolve(ref.uri)
    latest = open_table(location).version()
    return _first_retained(location, latest), latest


def _first_retained(location: TableLocation, latest: int) -> int:
    infos = location.filesystem.get_file_info(pafs.FileSelector(location.log_dir, allow_not_found=True))
    versions = []
    for info in infos:
        stem = info.base_name.split(".", 1)[0]
        if stem.isdigit() and (info.base_name.endswith(".json") or ".checkpoint" in info.base_name):
            versions.append(int(stem))
    return min(versions) if versions else latest


def parse_as_of(value: Any) -> int | datetime | None:
    """`3` / `v3` / an int -> version 3; an ISO date or timestamp -> an aware UTC datetime (naive = UTC)."""
    if value is None or isinstance(value, int):
        return value
    if isinstance(value, datetime):
        return value if value.tzinfo else value.replace(tzinfo=UTC)
    text = str(value).strip().strip("'\"")
    digits = text[1:] if text[:1] in ("v", "V") else text
    if digits.isdigit():
        return int(digits)
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        raise VersionOutOfRangeError(
            f"cannot read {value!r} as a version or a timestamp: use a version number (3, v3) or an ISO "
            "timestamp such as 2026-11-21T10:00:00Z",
            table="",
            first=0,
            latest=0,
        ) from None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


def open_at(ref: TableRef, as_of: int | datetime | None) -> DeltaTable:
    """The table at a version or timestamp; out of range -> VersionOutOfRangeError with the valid range."""
    location = resolve(ref.uri)
    if as_of is None:
        return open_table(location)
    first, latest = version_range(ref)
    if isinstance(as_of, int):
        if not first <= as_of <= latest:
            raise VersionOutOfRangeError(
                f"{ref.name} has no version {as_of}: valid versions are {first}..{latest}",
                table=ref.name,
                first=first,
                latest=latest,
            )
        return open_table(location, version=as_of)
    first_time = _commit_time(location, first)
    if first_time is not None and as_of < first_time:
        raise VersionOutOfRangeError(
            f"{ref.name} did not exist yet at {as_of.isoformat()}: its history starts at version {first} "
            f"({first_time.isoformat()}); valid versions are {first}..{latest}",
            table=ref.name,
            first=first,
            latest=latest,
        )
    try:
        return open_table(location, timestamp=as_of)
    except Exception as exc:  # delta-rs refuses some timestamps outside the log: same answer
        raise VersionOutOfRangeError(
            f"{ref.name} has no version at {as_of.isoformat()}: valid versions are {first}..{latest}",
            table=ref.name,
            first=first,
            latest=latest,
        ) from exc


def _commit_time(location: TableLocation, version: int) -> datetime | None:
    path = f"{location.log_dir}/{version:020d}.json"
    try:
        for action in _log_actions(location, path):
            if "commitInfo" in action and action["commitInfo"].get("timestamp") is not None:
                return _ms(action["commitInfo"]["timestamp"])
    except FileNotFoundError:
        return None
    return None


def _ms(value: Any) -> datetime:
    return datetime.fromtimestamp(int(value) / 1000, tz=UTC)


def _log_actions(location: TableLocation, path: str) -> list[dict[str, Any]]:
    with location.filesystem.open_input_stream(path) as stream:
        return [json.loads(line) for line in stream.read().decode("utf-8").splitlines() if line.strip()]


# --------------------------------------------------------------------------------------- summaries


@dataclass
class TableInfo:
    name: str
    layer: str
    uri: str
    version: int
    rows: int | None
    files: int
    size_bytes: int
    partition_columns: list[str]
    last_commit: datetime | None
    last_operation: str

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "layer": self.layer,
            "version": self.version,
            "rows": self.rows,
            "files": self.files,
            "size_bytes": self.size_bytes,
            "partition_columns": self.partition_columns,
            "last_commit": self.last_commit.isoformat() if self.last_commit else None,
            "last_operation": self.last_operation,
            "uri": self.uri,
        }


def commit_entry(entry: Mapping[str, Any]) -> dict[str, Any]:
    """A commit info with the metadata a Spark (delta-spark) write keeps as JSON in `userMetadata`
    flattened into it, so commits carry the same keys (`streamhouse.inputs`, ...) whoever wrote them."""
    raw = entry.get("userMetadata")
    extra: dict[str, Any] = {}
    if isinstance(raw, str) and raw.startswith("{"):
        try:
            parsed = json.loads(raw)
            extra = parsed if isinstance(parsed, dict) else {}
        except ValueError:
            extra = {}
    return {**extra, **entry}


def operation_of(commit: Mapping[str, Any]) -> str:
    """`WRITE (overwrite_where)`: the Delta operation and, when Streamhouse wrote it, its mode or step."""
    op = str(commit.get("operation") or "?")
    detail = commit.get("streamhouse.operation") or commit.get("streamhouse.mode")
    return f"{op} ({detail})" if detail else op


def table_info(ref: TableRef) -> TableInfo:
    dt = open_table(resolve(ref.uri))
    files = active_files(dt)
    counts = [f.num_records for f in files]
    last = commit_entry((dt.history(1) or [{}])[0])
    return TableInfo(
        name=ref.name,
        layer=ref.layer,
        uri=ref.uri,
        version=dt.version(),
        rows=sum(c for c in counts if c is not None) if all(c is not None for c in counts) else None,
        files=len(files),
        size_bytes=sum(f.size for f in files),
        partition_columns=partition_columns(dt),
        last_commit=_ms(last["timestamp"]) if last.get("timestamp") is not None else None,
        last_operation=operation_of(last),
    )


def list_tables(lake_root: str | os.PathLike[str] | None = None) -> list[TableInfo]:
    """One summary per table, sorted by name."""
    lake = discover(lake_root)
    return [table_info(lake.tables[name]) for name in lake.names()]


# --------------------------------------------------------------------------------------- describe


def _type_name(t: Any) -> str:
    if isinstance(t, str):
        return t
    kind = t.get("type")
    if kind == "array":
        return f"array<{_type_name(t['elementType'])}>"
    if kind == "map":
        return f"map<{_type_name(t['keyType'])},{_type_name(t['valueType'])}>"
    if kind == "struct":
        return "struct<" + ",".join(f"{f['name']}:{_type_name(f['type'])}" for f in t["fields"]) + ">"
    return str(kind)


@dataclass
class TableDescription:
    name: str
    uri: str
    version: int
    description: str
    columns: list[dict[str, Any]]  # name, type, nullable, partition, description
    partition_columns: list[str]
    properties: dict[str, Any]

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "uri": self.uri,
            "version": self.version,
            "description": self.description,
            "columns": self.columns,
            "partition_columns": self.partition_columns,
            "properties": self.properties,
        }


def describe(ref: TableRef, as_of: int | datetime | None = None) -> TableDescription:
    dt = open_at(ref, as_of)
    parts = partition_columns(dt)
    doc, column_docs = table_doc(ref.name)
    columns = [
        {
            "name": f["name"],
            "type": _type_name(f["type"]),
            "nullable": bool(f.get("nullable", True)),
            "partition": f["name"] in parts,
            "description": column_docs.get(f["name"], ""),
        }
        for f in schema_json(dt)["fields"]
    ]
    meta = dt.metadata()
    protocol = dt.protocol()
    properties: dict[str, Any] = {
        "table_id": meta.id,
        "created": _ms(meta.created_time).isoformat() if meta.created_time else None,
        "min_reader_version": protocol.min_reader_version,
        "min_writer_version": protocol.min_writer_version,
        **({"name": meta.name} if meta.name else {}),
        **({"description": meta.description} if meta.description else {}),
        **({"reader_features": list(protocol.reader_features)} if protocol.reader_features else {}),
        **({"writer_features": list(protocol.writer_features)} if protocol.writer_features else {}),
        **dict(meta.configuration or {}),
    }
    return TableDescription(ref.name, ref.uri, dt.version(), doc, columns, parts, properties)


def history(
    ref: TableRef, limit: int | None = 20, run_ids: Mapping[int, str] | None = None
) -> list[dict[str, Any]]:
    """The newest `limit` commits: version, time, operation, Dagster run id, rows added/removed (data
    changes only, so an OPTIMIZE adds and removes nothing) and the input versions the commit recorded.

    Rows removed are looked up from the files' stats at the version before the oldest shown commit
    plus the commits in between; `None` when a removed file's row count is not known.
    """
    location = resolve(ref.uri)
    dt = open_table(location)
    entries = [commit_entry(e) for e in dt.history(limit)]
    if not entries:
        return []
    oldest = min(e["version"] for e in entries)
    known: dict[str, int | None] = {}
    if oldest > 0:
        try:
            known = {
                f.rel_path: f.num_records for f in active_files(open_table(location, version=oldest - 1))
            }
        except Exception:  # the version before left the log: removed counts may be unknown
            known = {}
    changes: dict[int, tuple[int | None, int | None]] = {}
    for version in range(oldest, dt.version() + 1):
        path = f"{location.log_dir}/{version:020d}.json"
        try:
            actions = _log_actions(location, path)
        except FileNotFoundError:
            continue
        added: int | None = 0
        removed: int | None = 0
        for action in actions:
            if "add" in action:
                add = action["add"]
                n = _num_records(add.get("stats"))
                known[_decoded(add["path"])] = n
                if add.get("dataChange", True):
                    added = None if added is None or n is None else added + n
            elif "remove" in action:
                rm = action["remove"]
                n = known.pop(_decoded(rm["path"]), None)
                if rm.get("dataChange", True):
                    removed = None if removed is None or n is None else removed + n
        changes[version] = (added, removed)
    out = []
    for entry in entries:
        version = entry["version"]
        added, removed = changes.get(version, (None, None))
        raw_inputs = entry.get("streamhouse.inputs")
        run_id = next((entry[k] for k in RUN_ID_KEYS if entry.get(k)), None) or (run_ids or {}).get(version)
        out.append(
            {
                "version": version,
                "timestamp": _ms(entry["timestamp"]).isoformat() if entry.get("timestamp") else None,
                "operation": operation_of(entry),
                "dagster_run_id": run_id,
                "rows_added": added,
                "rows_removed": removed,
                "input_versions": json.loads(raw_inputs) if raw_inputs else None,
                "partitions": entry.get("partitions") or None,
            }
        )
    return out


def _num_records(stats: Any) -> int | None:
    if not stats:
        return None
    try:
        value = json.loads(stats).get("numRecords")
    except (TypeError, ValueError):
        return None
    return int(value) if value is not None else None


def _decoded(path: str) -> str:
    from urllib.parse import unquote

    return unquote(path)
