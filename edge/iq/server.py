"""HTTP server of one instance: interactive queries, metadata, health and Prometheus metrics.

Endpoints (JSON unless noted)::

    GET /health                                 state of the instance; status OK, or DEGRADED + reasons
    GET /metrics                                Prometheus text
    GET /v1/metadata                            instances, the partitions/stores each hosts
    GET /v1/stores                              queryable stores
    GET /v1/stores/<store>/keys/<key>           one key (forwarded to the instance hosting it)
    GET /v1/stores/<store>/range?from=&to=      inclusive key range, all instances (``local=true``: this one)
    GET /v1/stores/<store>/all                  every entry, all instances (``local=true``: this one)

Window and session stores: ``keys/<key>?from=&to=`` answers the key's windows (start in ``[from, to]``)
or sessions (ending at or after ``from``, starting at or before ``to``); ``range`` and ``all`` take
``time_from=`` / ``time_to=``. Times are epoch ms or ISO-8601. Each entry carries ``window.start`` and
``window.end``. Versioned stores (``Materialized.as_versioned``) answer ``keys/<key>`` with the
latest value, ``keys/<key>?as_of=<time>`` with the value valid then, each with ``timestamp`` (valid
from) and ``valid_to`` (None while current); they do not answer ``range``/``all``.

404 unknown store or key, 400 bad parameters, 503 while the instance restores/rebalances or the owner of
a key is unknown (retry), 421 for a ``Host`` that does not name this server (DNS rebinding; extra names:
``http.allowed.hosts``). A key's partition is ``murmur2(key bytes) % partitions`` -- the producer's.
Connections are served by a bounded pool of threads and closed after ``READ_TIMEOUT_S`` without a
request (:mod:`edge.iq.http`).
Stores are read on the stream thread (``StreamsApp.run_on_stream_thread``), never concurrently.
"""

from __future__ import annotations

import logging
import socket
import threading
import urllib.error
import urllib.parse
import urllib.request
from http.server import BaseHTTPRequestHandler
from typing import TYPE_CHECKING, Any

import orjson

from edge.iq import windowed as win
from edge.iq.http import CLIENT_GONE, LOOPBACK_NAMES, AllowedHosts, BoundedHTTPServer, RateLimitedLog
from edge.iq.keys import BadKeyError, parse_key, parse_time, to_jsonable, value_fields, windowed_fields
from edge.processor.partitioner import default_partition
from edge.serde import ValueAndTimestamp

if TYPE_CHECKING:
    from edge.runtime.app import StreamsApp
    from edge.runtime.stores import StoreProvider

log = logging.getLogger(__name__)

FORWARDED_HEADER = "X-Streamhouse-Forwarded"
DEFAULT_LIMIT = 10_000

#: a connection that sends no request for this long (a first one, or the next on a keep-alive
#: connection) is closed; also the longest a worker waits on a client that stopped reading
READ_TIMEOUT_S = 10.0
#: threads serving requests (started as needed); a query waits for the stream thread anyway, and a
#: forwarded one for another instance, so a few more than one is plenty
MAX_WORKERS = 16
#: open connections (idle, queued or served) past which a new one is answered 503 and closed
MAX_CONNECTIONS = 256
#: the listen() backlog: a burst of connects waits in the kernel (which caps it at net.core.somaxconn)
LISTEN_BACKLOG = max(128, socket.SOMAXCONN)
#: least time between two log lines about clients that hung up early (the ones between are counted)
DISCONNECT_LOG_INTERVAL_S = 10.0


def health(app: StreamsApp) -> dict[str, Any]:
    """``/health``: the instance's state, and ``status`` DEGRADED with ``reasons`` while the cluster
    keeps it from working as it should (partitions of its topics without a leader, sends failing, no
    broker answering) though it is still RUNNING, else OK.

    Answered from what the clients' callbacks recorded, never from the stream thread, so it answers
    while that thread waits on sends. Always 200 for one instance (its body says the state, as before):
    a probe that restarts the instance on DEGRADED would not bring the broker back.
    """
    outage, collector = app.outage, app.collector
    reasons = outage.health_reasons(collector) if outage is not None else []
    return {
        "state": app.state.value,
        "instance": app.instance_id,
        "restoring": app.restoring,
        "status": "DEGRADED" if reasons else "OK",
        "reasons": reasons,
    }


class HttpError(Exception):
    def __init__(self, status: int, message: str, **extra: Any) -> None:
        self.status = status
        self.message = message
        self.extra = extra
        super().__init__(message)


class QueryServer:
    """The instance's HTTP server: its handler answers queries, metadata, health and metrics.

    Bounded (``MAX_WORKERS`` threads, ``MAX_CONNECTIONS`` connections, ``READ_TIMEOUT_S`` per idle
    connection) so that careless or hostile clients cannot pile up threads and file handles in the
    instance, and checked (``Host``) so that a browser page cannot read stores through DNS rebinding.
    """

    def __init__(self, app: StreamsApp, host: str, port: int, *, stores: StoreProvider) -> None:
        self.app = app
        #: the instance's stores (read on the stream thread, through ``app.run_on_stream_thread``)
        self.stores = stores
        handler = type("Handler", (_Handler,), {"server_app": app, "query": self})
        self.backlog = LISTEN_BACKLOG
        self._server = BoundedHTTPServer(
            (host, port),
            handler,
            read_timeout_s=READ_TIMEOUT_S,
            max_workers=MAX_WORKERS,
            max_connections=MAX_CONNECTIONS,
            backlog=self.backlog,
            disconnects=RateLimitedLog(
                log, "early disconnects", interval_s=DISCONNECT_LOG_INTERVAL_S, level=logging.INFO
            ),
            refusals=RateLimitedLog(log, "refused connections", level=logging.WARNING),
        )
        self.host = host
        self.port = self._server.server_address[1]
        cfg = app.config
        advertised_host, advertised_port = cfg.server_host_port
        #: the Host names answered: loopback, the bound address, application.server, http.allowed.hosts
        self.allowed_hosts = AllowedHosts(
            (*LOOPBACK_NAMES, host, self._server.server_address[0], advertised_host),
            (self.port, advertised_port),
            cfg.http_allowed_hosts,
        )
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = self._server.start("streamhouse-http")

    def stop(self) -> None:
        self._server.stop()

    # -- query logic ------------------------------------------------------------------------------------
    def _catalog_entry(self, store: str) -> dict[str, Any]:
        entry = self.app.store_catalog.get(store)
        if entry is None:
            known = sorted(self.app.store_catalog)
            raise HttpError(404, f"unknown store {store!r}", known_stores=known)
        return entry

    def _require_running(self) -> None:
        from edge.runtime.state import State

        state = self.app.state
        if state is not State.RUNNING or self.app.restoring:
            raise HttpError(
                503, f"instance is {state.value}{' (restoring)' if self.app.restoring else ''}; retry"
            )

    def get_key(
        self, store: str, key_text: str, forwarded: bool, params: dict[str, str] | None = None
    ) -> tuple[int, dict[str, Any]]:
        entry = self._catalog_entry(store)
        params = params or {}
        unknown = set(params) - set(win.TIME_PARAMS) - {"as_of"}
        if unknown:
            raise HttpError(
                400,
                f"unknown parameter(s) {sorted(unknown)}; allowed: {list(win.TIME_PARAMS)} (windowed "
                "stores), as_of (versioned stores)",
            )
        try:
            key = parse_key(key_text, entry["key_serde"])
            key_bytes = entry["key_serde"].serialize("", key)
            bounds = tuple(
                None if params.get(p) is None else parse_time(params[p], p) for p in win.TIME_PARAMS
            )
            as_of = None if params.get("as_of") is None else parse_time(params["as_of"], "as_of")
        except BadKeyError as exc:
            raise HttpError(400, str(exc)) from exc
        except Exception as exc:
            raise HttpError(400, f"key {key_text!r} cannot be serialized: {exc}") from exc
        self._require_running()
        app = self.app
        if entry["global"]:
            value = app.run_on_stream_thread(lambda: self._global_store(store).get(key))
            return self._key_answer(store, key, value, None)
        st, n = entry["subtopology"], entry["partitions"]
        partition = default_partition(key_bytes, n)
        md = app.metadata
        owner = md.owner_of(st, partition) if md is not None else None
        if owner is None:
            raise HttpError(
                503, f"no live instance hosts partition {partition} of store {store!r} yet; retry"
            )
        if owner.instance_id != app.instance_id:
            if forwarded:
                raise HttpError(503, f"partition {partition} of {store!r} is moving between instances; retry")
            quoted_key = urllib.parse.quote(key_text, safe="")
            path = f"/v1/stores/{urllib.parse.quote(store, safe='')}/keys/{quoted_key}"
            if params:
                path += "?" + urllib.parse.urlencode(params)
            return self._forward(owner.server, path)

        def lookup() -> tuple[bool, str, Any]:
            s = self.stores.active_store(store, st, partition)
            if s is None:
                return False, "", None
            kind = win.store_kind(s)
            if kind == "key_value":
                return True, kind, s.get(key)
            if kind == "versioned":
                return True, kind, s.get(key) if as_of is None else s.get(key, as_of)
            return True, kind, win.fetch_key(s, key, *bounds)

        hosted, kind, value = app.run_on_stream_thread(lookup)
        if not hosted:
            raise HttpError(
                503, f"partition {partition} of store {store!r} is not hosted here right now; retry"
            )
        if kind == "versioned":
            if set(params) - {"as_of"}:
                raise HttpError(400, f"store {store!r} is a versioned store: only as_of applies")
            if value is None:
                when = "" if as_of is None else f" as of {as_of}"
                raise HttpError(
                    404, f"key {key!r} has no value{when} in store {store!r}", partition=partition
                )
            return self._key_answer(
                store, key, ValueAndTimestamp(value.value, value.timestamp), partition, value
            )
        if "as_of" in params:
            raise HttpError(400, f"store {store!r} is not versioned: as_of applies to versioned stores")
        if kind == "key_value":
            if params:
                raise HttpError(
                    400, f"store {store!r} is a key-value store: from/to apply to windowed stores"
                )
            return self._key_answer(store, key, value, partition)
        return self._windows_answer(store, key, value, partition)

    def _windows_answer(
        self, store: str, key: Any, windows: list[tuple[Any, Any]], partition: int | None
    ) -> tuple[int, dict[str, Any]]:
        if not windows:
            raise HttpError(404, f"no windows for key {key!r} in store {store!r}", partition=partition)
        return 200, {
            "store": store,
            "key": to_jsonable(key),
            "windows": [windowed_fields(w, v) for w, v in windows],
            "partition": partition,
            "instance": self.app.instance_id,
            "server": self.app.advertised_server,
        }

    def _key_answer(
        self, store: str, key: Any, value: Any, partition: int | None, versioned: Any = None
    ) -> tuple[int, dict[str, Any]]:
        if value is None:
            raise HttpError(404, f"key {key!r} not found in store {store!r}", partition=partition)
        body = {
            "store": store,
            "key": to_jsonable(key),
            **value_fields(value),
            # versioned stores: when the value stopped being valid (None: it is the latest)
            **({} if versioned is None else {"valid_to": versioned.valid_to}),
            "partition": partition,
            "instance": self.app.instance_id,
            "server": self.app.advertised_server,
        }
        return 200, body

    def _global_store(self, store: str) -> Any:
        s = self.stores.global_store(store)
        if s is None:
            raise HttpError(503, f"global store {store!r} is not loaded yet; retry")
        return s

    def _forward(self, server: str, path_and_query: str) -> tuple[int, dict[str, Any]]:
        req = urllib.request.Request(f"http://{server}{path_and_query}", headers={FORWARDED_HEADER: "1"})
        try:
            with urllib.request.urlopen(req, timeout=10) as resp:
                return resp.status, orjson.loads(resp.read())
        except urllib.error.HTTPError as exc:
            try:
                return exc.code, orjson.loads(exc.read())
            except Exception:
                return exc.code, {"error": str(exc)}
        except (urllib.error.URLError, OSError) as exc:
            raise HttpError(503, f"instance at {server} did not answer ({exc}); retry") from exc

    def scan(
        self, store: str, params: dict[str, str], kind: str, forwarded: bool
    ) -> tuple[int, dict[str, Any]]:
        entry = self._catalog_entry(store)
        allowed = {"from", "to", "local", "limit"} if kind == "range" else {"local", "limit"}
        allowed |= set(win.SCAN_TIME_PARAMS)
        unknown = set(params) - allowed
        if unknown:
            raise HttpError(400, f"unknown parameter(s) {sorted(unknown)}; allowed: {sorted(allowed)}")
        try:
            limit = int(params.get("limit", DEFAULT_LIMIT))
            if limit < 1:
                raise ValueError
        except ValueError:
            raise HttpError(400, f"limit must be a positive integer, got {params.get('limit')!r}") from None
        local = params.get("local", "false").lower() in ("1", "true", "yes") or forwarded
        serde = entry["key_serde"]
        try:
            lo = parse_key(params["from"], serde) if params.get("from") is not None else None
            hi = parse_key(params["to"], serde) if params.get("to") is not None else None
            t_lo, t_hi = (
                None if params.get(p) is None else parse_time(params[p], p) for p in win.SCAN_TIME_PARAMS
            )
        except BadKeyError as exc:
            raise HttpError(400, str(exc)) from exc
        self._require_running()
        app = self.app

        def local_scan() -> list[tuple[bytes, Any, Any]]:
            if entry["global"]:
                stores = [self._global_store(store)]
            else:
                stores = self.stores.active_stores(store, entry["subtopology"])
            out: list[tuple[bytes, Any, Any]] = []
            for s in stores:
                if win.store_kind(s) == "versioned":
                    raise HttpError(
                        400, f"store {store!r} is a versioned store: query single keys (keys/<key>?as_of=)"
                    )
                if win.store_kind(s) != "key_value":
                    for w, v in win.scan(s, lo, hi, t_lo, t_hi, kind == "all")[: limit * 4]:
                        out.append((win.sort_key(serde, w), w, v))
                    continue
                if t_lo is not None or t_hi is not None:
                    raise HttpError(
                        400, f"store {store!r} is a key-value store: time_from/time_to do not apply"
                    )
                it = s.all() if kind == "all" else s.range(lo, hi)
                with it:
                    for k, v in it:
                        out.append((serde.serialize("", k) or b"", k, v))
                        if len(out) >= limit * 4:
                            break
            return out

        rows = app.run_on_stream_thread(local_scan, timeout=30)
        entries = [
            {
                **(
                    windowed_fields(k, v)
                    if isinstance(k, win.Windowed)
                    else {"key": to_jsonable(k), **value_fields(v)}
                ),
                "_kb": kb,
            }
            for kb, k, v in rows
        ]
        instances = [app.instance_id]
        if not local and not entry["global"] and app.metadata is not None:
            query = {k: v for k, v in params.items() if k != "local"}
            query["local"] = "true"
            path = f"/v1/stores/{urllib.parse.quote(store, safe='')}/{kind}?{urllib.parse.urlencode(query)}"
            for info in app.metadata.live_instances():
                if info.instance_id == app.instance_id:
                    continue
                status, body = self._forward(info.server, path)
                if status != 200:
                    raise HttpError(
                        503,
                        f"instance {info.instance_id} at {info.server} answered {status}; retry",
                        detail=body,
                    )
                instances.append(info.instance_id)
                for e in body.get("entries", []):
                    e["_kb"] = orjson.dumps(e["key"])
                    entries.append(e)
        if local or entry["global"]:
            entries.sort(key=lambda e: e["_kb"])
        else:
            entries.sort(key=lambda e: orjson.dumps(e["key"]))
        for e in entries:
            e.pop("_kb", None)
        truncated = len(entries) > limit
        return 200, {
            "store": store,
            "entries": entries[:limit],
            "count": min(len(entries), limit),
            "truncated": truncated,
            "instances": instances,
        }

    def metadata(self) -> dict[str, Any]:
        app = self.app
        md = app.metadata
        instances = []
        if md is not None:
            for info in md.live_instances():
                stores = sorted(
                    name
                    for name, e in app.store_catalog.items()
                    if e["global"] or e["subtopology"] in info.active or e["subtopology"] in info.standby
                )
                instances.append(
                    {
                        "instance": info.instance_id,
                        "server": info.server,
                        "state": info.state,
                        "active": {str(k): v for k, v in info.active.items()},
                        "standby": {str(k): v for k, v in info.standby.items()},
                        "stores": stores,
                        "local": info.instance_id == app.instance_id,
                    }
                )
        stores = {
            name: {"subtopology": e["subtopology"], "partitions": e["partitions"], "global": e["global"]}
            for name, e in app.store_catalog.items()
        }
        return {
            "application_id": app.config.application_id,
            "instance": app.instance_id,
            "server": app.advertised_server,
            "state": app.state.value,
            "instances": instances,
            "stores": stores,
        }


class _Handler(BaseHTTPRequestHandler):
    server_app: StreamsApp
    query: QueryServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("http %s", format % args)

    def _send(
        self, status: int, body: bytes, content_type: str, headers: dict[str, str] | None = None
    ) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(body)))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(body)
        except CLIENT_GONE as exc:
            # the client hung up (or stopped reading) before its answer: nothing to answer, nothing wrong
            # here -- one rate-limited line, and the connection is done
            self.close_connection = True
            self.server.client_gone(self.client_address, exc)  # type: ignore[attr-defined]

    def _json(self, status: int, obj: Any) -> None:
        headers = {"Retry-After": "1"} if status == 503 else None
        self._send(status, orjson.dumps(obj), "application/json", headers)

    def do_GET(self) -> None:
        url = urllib.parse.urlsplit(self.path)
        parts = [urllib.parse.unquote(p) for p in url.path.split("/") if p]
        params = dict(urllib.parse.parse_qsl(url.query, keep_blank_values=True))
        forwarded = self.headers.get(FORWARDED_HEADER) == "1"
        q = self.query
        host = self.headers.get("Host")
        if not q.allowed_hosts.allows(host):
            # DNS rebinding: a page on a name rebound to this address sends its own name; 421 says "not
            # this server" without revealing anything about it
            self.close_connection = True
            self._json(
                421,
                {
                    "error": f"host {host!r} is not a name of this server; to reach it under that name, "
                    "add the name to the http.allowed.hosts setting"
                },
            )
            return
        try:
            if parts == ["metrics"]:
                from edge.runtime.metrics import render_metrics

                self._send(
                    200, render_metrics(self.server_app).encode(), "text/plain; version=0.0.4; charset=utf-8"
                )
                return
            if parts == ["health"]:
                self._json(200, health(self.server_app))
                return
            if parts == ["v1", "metadata"]:
                self._json(200, q.metadata())
                return
            if parts == ["v1", "stores"]:
                self._json(200, {"stores": sorted(self.server_app.store_catalog)})
                return
            if len(parts) == 5 and parts[:2] == ["v1", "stores"] and parts[3] == "keys":
                status, body = q.get_key(parts[2], parts[4], forwarded, params)
                self._json(status, body)
                return
            if len(parts) == 4 and parts[:2] == ["v1", "stores"] and parts[3] in ("range", "all"):
                status, body = q.scan(parts[2], params, parts[3], forwarded)
                self._json(status, body)
                return
            raise HttpError(404, f"no such endpoint {url.path!r}")
        except HttpError as exc:
            self._json(exc.status, {"error": exc.message, **exc.extra})
        except win.NotQueryableError as exc:
            self._json(400, {"error": str(exc)})
        except TimeoutError:
            self._json(503, {"error": "the stream thread is busy (restoring or rebalancing); retry"})
        except Exception as exc:
            log.exception("query %s failed", self.path)
            self._json(500, {"error": f"{type(exc).__name__}: {exc}"})
