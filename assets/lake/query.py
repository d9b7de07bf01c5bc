"""SQL over the lake: DuckDB over deltalake's Arrow datasets, every table a view named `layer.table`.

Why Arrow datasets and not DuckDB's `delta` extension: the extension needs a download, and the
dataset deltalake builds already carries, per data file, an expression with the file's partition
values and min/max statistics. DuckDB pushes a query's projection and filters into the dataset scan,
and pyarrow skips every fragment (file) whose expression cannot match: a query for one day of a
daily table opens that day's files only, and only the columns it uses. `ScanStats` counts the files
actually opened, so that claim is tested, not assumed.

Time travel: `LakeSession(as_of=...)` pins every table to a version or timestamp, and
`gold.revenue_tumbling_5m@v3` / `@2026-11-21T10:00:00Z` in the SQL pins one table. The `@` suffix is
rewritten to a view named `"revenue_tumbling_5m@v3"` before DuckDB sees the SQL; error positions are
mapped back to the SQL as written.
"""

from __future__ import annotations

import json
import os
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any

import duckdb
from pyarrow import dataset as pads
from pyarrow import fs as pafs

from assets.delta.location import resolve
from assets.lake.catalog import Lake, TableRef, discover, open_at, parse_as_of, unknown_table
from assets.lake.errors import SqlError, SqlSyntaxError, UnknownColumnError

if TYPE_CHECKING:
    import pyarrow as pa

# ------------------------------------------------------------------------------------ counting reads


@dataclass
class ScanStats:
    """Data files opened by queries (table name -> relative paths), and bytes read when counted."""

    files: dict[str, list[str]] = field(default_factory=dict)
    bytes_read: int = 0
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @property
    def files_read(self) -> int:
        return sum(len(set(paths)) for paths in self.files.values())

    def record(self, table: str, path: str) -> None:
        with self._lock:
            self.files.setdefault(table, []).append(path)

    def add_bytes(self, n: int) -> None:
        with self._lock:
            self.bytes_read += n

    def reset(self) -> None:
        with self._lock:
            self.files.clear()
            self.bytes_read = 0


def _process_bytes_read() -> int | None:
    """Bytes this process has read through read(2)/pread(2) so far (Linux ``/proc/self/io`` ``rchar``).

    Counting bytes at the kernel keeps Python out of the read path: wrapping each file in a Python
    file object made Arrow's and DuckDB's reader threads wait for the GIL, which could deadlock.
    """
    try:
        with open("/proc/self/io", "rb") as f:
            for line in f:
                if line.startswith(b"rchar:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


class CountingDataset(pads.FileSystemDataset):
    """A table's Arrow dataset that records the data files each scan is given.

    DuckDB scans a registered dataset through ``scanner(columns=..., filter=...)``. The fragments that
    survive the filter (partition values and the min/max statistics deltalake attaches to each file)
    are exactly the files Arrow opens, so they are recorded there, on the calling thread. Counting at
    the filesystem instead (a Python ``FileSystemHandler``) deadlocked: Arrow's I/O threads opened the
    files and needed the GIL, which the thread starting the scan held while it waited for them.
    """

    stats: ScanStats
    table: str

    @classmethod
    def wrap(cls, dataset: pads.FileSystemDataset, table: str, stats: ScanStats) -> CountingDataset:
        counting = cls(
            list(dataset.get_fragments()),
            dataset.schema,
            dataset.format,
            dataset.filesystem,
            dataset.partition_expression,
        )
        counting.table, counting.stats = table, stats
        return counting

    def scanner(self, columns: Any = None, filter: Any = None, **kwargs: Any) -> pads.Scanner:
        for fragment in self.get_fragments(filter=filter):
            self.stats.record(self.table, fragment.path)
        return super().scanner(columns=columns, filter=filter, **kwargs)


# ------------------------------------------------------------------------------------ table references

_IDENT = r'(?:"(?:[^"]|"")+"|[A-Za-z_][A-Za-z0-9_$]*)'
_TIMESTAMP = r"\d{4}-\d{2}-\d{2}(?:T\d{2}:\d{2}(?::\d{2}(?:\.\d+)?)?)?(?:Z|[+-]\d{2}:?\d{2})?"
_REF = re.compile(
    rf"(?<![\w.\"])(?P<layer>{_IDENT})\s*\.\s*(?P<table>{_IDENT})"
    rf"(?:@(?P<as_of>[vV]\d+|{_TIMESTAMP}|'[^']*'|\d+))?(?![\w\"])"
)


def _unquote(ident: str) -> str:
    return ident[1:-1].replace('""', '"') if ident.startswith('"') else ident


def _code_spans(sql: str) -> Iterator[tuple[int, int]]:
    """Spans of `sql` outside string literals and comments."""
    i, start, n = 0, 0, len(sql)
    while i < n:
        c = sql[i]
        if c == "'":
            yield start, i
            j = i + 1
            while j < n:
                if sql[j] == "'" and j + 1 < n and sql[j + 1] == "'":
                    j += 2
                    continue
                if sql[j] == "'":
                    break
                j += 1
            i = start = j + 1
            continue
        if sql.startswith("--", i):
            yield start, i
            j = sql.find("\n", i)
            i = start = n if j < 0 else j
            continue
        if sql.startswith("/*", i):
            yield start, i
            j = sql.find("*/", i + 2)
            i = start = n if j < 0 else j + 2
            continue
        i += 1
    yield start, n


@dataclass(frozen=True)
class TableMention:
    name: str  # layer.table as written (unquoted)
    as_of: str | None  # the text after '@', if any
    start: int
    end: int


def find_tables(sql: str) -> list[TableMention]:
    """Every `layer.table[@as_of]` outside string literals and comments (column references such as
    `t.col` are included too; callers keep the ones that name a layer of the lake)."""
    mentions = []
    for a, b in _code_spans(sql):
        for m in _REF.finditer(sql, a, b):
            name = f"{_unquote(m['layer'])}.{_unquote(m['table'])}"
            mentions.append(TableMention(name, m["as_of"], m.start(), m.end()))
    return mentions


# ------------------------------------------------------------------------------------ the session


@dataclass
class _Edit:
    start: int  # in the original SQL
    end: int
    new_len: int


class LakeSession:
    """A DuckDB connection over the lake. Views are registered on first use (`query`) or all at once
    (`register_all`); each is a pinned snapshot, so one query sees one version of each table.

    `as_of`: a version or timestamp for every table; `count_reads`: record the data files opened
    (`scans`), `count_bytes`: and the bytes the process read while running `arrow()` queries (Linux).

    `locked`: the SQL cannot reach the file system or network (`read_csv('/etc/passwd')`, `COPY ... TO`,
    `ATTACH`, `INSTALL` fail) and cannot unlock itself (`lock_configuration`). Lake tables and time
    travel keep working, because deltalake and pyarrow read them in Python, outside DuckDB's reach. Use
    it wherever the SQL comes from someone other than the user running the process.
    """

    def __init__(
        self,
        lake_root: str | os.PathLike[str] | None = None,
        *,
        as_of: int | str | datetime | None = None,
        count_reads: bool = False,
        count_bytes: bool = False,
        threads: int | None = None,
        locked: bool = False,
    ) -> None:
        self.lake: Lake = discover(lake_root)
        self.as_of = parse_as_of(as_of)
        self.count_reads = count_reads or count_bytes
        self.count_bytes = count_bytes
        self.scans = ScanStats()
        self.con = duckdb.connect()
        self.con.execute("SET errors_as_json = true")
        # A name DuckDB cannot find must be an error, not a Python variable of the caller's frame.
        self.con.execute("SET python_enable_replacements = false")
        self.con.execute("SET TimeZone = 'UTC'")
        if threads:
            self.con.execute(f"SET threads = {int(threads)}")
        if locked:
            self.con.execute("SET enable_external_access = false")
            self.con.execute("SET lock_configuration = true")
        self.locked = locked
        self._views: dict[tuple[str, int], str] = {}  # (table, version) -> internal Arrow name
        self._schemas: set[str] = set()
        self.versions: dict[str, int] = {}  # view name as used in SQL -> version it shows
        self._last: tuple[str, list[_Edit]] = ("", [])  # the last SQL as rewritten, for error positions

    # ------------------------------------------------------------------ lifecycle
    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> LakeSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ registration
    def _dataset(self, ref: TableRef, dt: Any) -> Any:
        location = resolve(ref.uri)
        dataset = dt.to_pyarrow_dataset(filesystem=pafs.SubTreeFileSystem(location.root, location.filesystem))
        return CountingDataset.wrap(dataset, ref.name, self.scans) if self.count_reads else dataset

    def register(self, name: str, as_of: int | str | datetime | None = None, *, pinned: bool = False) -> str:
        """Register `name` (as of `as_of`, else the session's) and return the view name to use in SQL.

        The plain name (`gold.x`) is the session's version; `pinned=True` registers `gold."x@v3"`.
        """
        ref = self.lake.get(name)
        when = parse_as_of(as_of) if as_of is not None else self.as_of
        dt = open_at(ref, when)
        version = dt.version()
        key = (ref.name, version)
        if key not in self._views:
            internal = f"__lake_{len(self._views)}"
            self.con.register(internal, self._dataset(ref, dt))
            self._views[key] = internal
        internal = self._views[key]
        if ref.layer not in self._schemas:
            self.con.execute(f"CREATE SCHEMA IF NOT EXISTS {_q(ref.layer)}")
            self._schemas.add(ref.layer)
        view_table = f"{ref.table}@v{version}" if pinned else ref.table
        view = f"{_q(ref.layer)}.{_q(view_table)}"
        if self.versions.get(f"{ref.layer}.{view_table}") != version:
            self.con.execute(f"CREATE OR REPLACE VIEW {view} AS SELECT * FROM {internal}")
            self.versions[f"{ref.layer}.{view_table}"] = version
        return view

    def register_all(self) -> list[str]:
        """Every table as a view (the interactive shell; `SHOW ALL TABLES` then lists them). Tables that
        did not exist yet at the session's timestamp are left out."""
        from assets.lake.errors import VersionOutOfRangeError

        names = []
        for name in self.lake.names():
            try:
                self.register(name)
            except VersionOutOfRangeError:
                if not isinstance(self.as_of, datetime):
                    raise
                continue
            names.append(name)
        return names

    # ------------------------------------------------------------------ queries
    def prepare(self, sql: str) -> tuple[str, list[_Edit]]:
        """Register the tables `sql` mentions and rewrite `table@as_of` to its pinned view."""
        layers = {ref.layer for ref in self.lake.tables.values()}
        edits: list[_Edit] = []
        parts: list[str] = []
        last = 0
        for mention in find_tables(sql):
            layer = mention.name.split(".", 1)[0]
            known = mention.name in self.lake.tables
            if mention.as_of is not None and not known:
                raise unknown_table(mention.name, self.lake)
            if not known:
                if layer in layers and not _is_function_call(sql, mention):
                    raise unknown_table(mention.name, self.lake)
                continue
            if mention.as_of is None:
                self.register(mention.name)
                continue
            view = self.register(mention.name, mention.as_of, pinned=True)
            parts += [sql[last : mention.start], view]
            edits.append(_Edit(mention.start, mention.end, len(view)))
            last = mention.end
        parts.append(sql[last:])
        return "".join(parts), edits

    def relation(self, sql: str) -> duckdb.DuckDBPyRelation | None:
        """`sql` as a lazy DuckDB relation (every statement runs; the relation is the last one's), or
        None for a statement that returns nothing (SET, CREATE ...). Mistakes raise LakeQueryErrors."""
        if not sql.strip():
            raise SqlSyntaxError("empty SQL: give a query such as SELECT * FROM gold.revenue_tumbling_5m")
        rewritten, edits = self.prepare(sql)
        self._last = (rewritten, edits)
        try:
            return self.con.sql(rewritten)
        except duckdb.Error as exc:
            raise self._friendly(self._structured(exc, rewritten), sql, rewritten, edits) from None

    def _structured(self, exc: duckdb.Error, rewritten: str) -> duckdb.Error:
        """`con.sql` reports parse/bind errors as plain text; `execute` (which fails the same way before
        running anything) reports them as JSON with the position and candidates."""
        if "{" in str(exc):
            return exc
        try:
            self.con.execute(rewritten)
        except duckdb.Error as again:
            return again
        return exc

    def arrow(self, sql: str) -> pa.Table:
        """The result of `sql` as an Arrow table (empty for statements that return nothing)."""
        import pyarrow as pa

        before = _process_bytes_read() if self.count_bytes else None
        rel = self.relation(sql)
        if rel is None:
            return pa.table({})
        try:
            return rel.to_arrow_table()
        except duckdb.Error as exc:
            raise self._friendly(exc, sql, *self._last) from None
        finally:
            after = _process_bytes_read() if before is not None else None
            if before is not None and after is not None:
                self.scans.add_bytes(after - before)

    def reader(self, sql: str, batch_rows: int = 65_536) -> pa.RecordBatchReader:
        """The result of `sql` as a stream of record batches (close it to free the connection)."""
        import pyarrow as pa

        rel = self.relation(sql)
        if rel is None:
            return pa.RecordBatchReader.from_batches(pa.schema([]), [])
        try:
            return _FriendlyReader(rel.to_arrow_reader(batch_rows), self, sql)
        except duckdb.Error as exc:
            raise self._friendly(exc, sql, *self._last) from None

    # ------------------------------------------------------------------ errors
    def _friendly(self, exc: duckdb.Error, sql: str, rewritten: str, edits: list[_Edit]) -> Exception:
        info = _error_info(exc)
        message = info.get("exception_message", str(exc)).strip()
        position = _original_position(rewritten, edits, info.get("position"))
        where = _where(sql, position)
        kind = info.get("exception_type", "")
        subtype = info.get("error_subtype", "")
        if kind == "Parser" or isinstance(exc, duckdb.ParserException):
            return SqlSyntaxError(
                f"SQL syntax error{_at(sql, position)}: {message}{where}", position=position
            )
        if (kind == "Binder" and subtype == "COLUMN_NOT_FOUND") or "Referenced column" in message:
            name = info.get("name") or _quoted(message) or "?"
            names = [c.strip().strip('"') for c in (info.get("candidates") or "").split(",") if c.strip()]
            spoken = " or ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)
            hint = f"; did you mean {spoken}?" if names else ""
            return UnknownColumnError(
                f'unknown column "{name}"{_at(sql, position)}{hint}{where}', name=name, position=position
            )
        if kind == "Catalog" and ("Table with name" in message or info.get("type") == "Table"):
            name = info.get("name") or _quoted(message) or "?"
            mentioned = [m.name for m in find_tables(sql) if m.name.endswith(name) or name in m.name]
            return unknown_table(mentioned[0] if mentioned else name, self.lake)
        return SqlError(f"{message}{_at(sql, position)}{where}", position=position)


class _FriendlyReader:
    """A record batch reader whose runtime errors (bad casts, ...) become LakeQueryErrors."""

    def __init__(self, reader: Any, session: LakeSession, sql: str) -> None:
        self._reader, self._session, self._sql = reader, session, sql
        self.schema = reader.schema

    def __iter__(self) -> Iterator[Any]:
        while True:
            try:
                batch = self._reader.read_next_batch()
            except StopIteration:
                return
            except duckdb.Error as exc:
                raise self._session._friendly(exc, self._sql, *self._session._last) from None
            yield batch

    def close(self) -> None:
        self._reader.close()


def _is_function_call(sql: str, mention: TableMention) -> bool:
    """`schema.function(...)` is not a table reference."""
    return sql[mention.end :].lstrip().startswith("(")


def _q(ident: str) -> str:
    return '"' + ident.replace('"', '""') + '"'


def _quoted(message: str) -> str | None:
    m = re.search(r'"([^"]+)"', message)
    return m.group(1) if m else None


def _error_info(exc: duckdb.Error) -> dict[str, Any]:
    text = str(exc)
    brace = text.find("{")
    if brace >= 0:
        try:
            info = json.loads(text[brace:])
            if isinstance(info, dict):
                return {k: str(v) for k, v in info.items()}
        except ValueError:
            pass
    prefix, _, rest = text.partition(": ")
    return {"exception_message": rest or text, "exception_type": prefix.replace(" Error", "")}


def _original_position(rewritten: str, edits: list[_Edit], raw: Any) -> int | None:
    """DuckDB's byte offset in the rewritten SQL -> character offset in the SQL as written."""
    if raw is None or str(raw).strip() in ("", "-1"):
        return None
    try:
        byte_pos = int(raw)
    except ValueError:
        return None
    pos = len(rewritten.encode("utf-8")[:byte_pos].decode("utf-8", "ignore"))
    shift = 0
    for e in edits:
        new_start = e.start + shift
        if pos < new_start:
            break
        if pos < new_start + e.new_len:
            return e.start
        shift += e.new_len - (e.end - e.start)
    return pos - shift


def _line_col(sql: str, position: int) -> tuple[int, int]:
    before = sql[:position]
    line = before.count("\n") + 1
    col = position - (before.rfind("\n") + 1) + 1
    return line, col


def _at(sql: str, position: int | None) -> str:
    if position is None:
        return ""
    line, col = _line_col(sql, position)
    return f" at line {line}, column {col}"


def _where(sql: str, position: int | None) -> str:
    if position is None:
        return ""
    line, col = _line_col(sql, position)
    text = sql.splitlines()[line - 1] if sql.splitlines() else ""
    if len(text) > 100:  # keep the caret in view on long lines
        lo = max(0, col - 60)
        text, col = ("..." if lo else "") + text[lo : lo + 100], col - lo + (3 if lo else 0)
    return f"\n  {text}\n  {' ' * (col - 1)}^"
