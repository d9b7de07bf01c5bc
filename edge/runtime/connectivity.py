"""Contact with the Kafka cluster: a watchdog that tells when it is gone (and back), and a log limiter.

Why both live here: they read the same signals. librdkafka reports every failed connection attempt
(``error_cb`` ``_TRANSPORT``, ``_ALL_BROKERS_DOWN``, ``FAIL`` log lines) and, in the stream consumer's
statistics, the state of each broker connection. With the cluster gone every client of an instance
retries every few hundred milliseconds, which is thousands of identical lines a minute: the
:class:`ConnectionLogLimiter` logs the first one per broker and then a summary at most every
``interval_s``. The :class:`ClusterWatchdog` turns the same signals into "unreachable for how long",
which the runtime uses to drop its tasks (as Kafka Streams does when its partitions are lost), report
REBALANCING, and give up with :class:`ClusterUnavailableError` after ``cluster.unavailable.timeout.ms``.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from confluent_kafka import KafkaError

from edge.errors import StreamhouseError

log = logging.getLogger(__name__)
#: librdkafka's own lines (what it would otherwise print to stderr)
rdkafka_log = logging.getLogger("edge.runtime.rdkafka")


class ClusterUnavailableError(StreamhouseError):
    """No broker of the cluster answered for longer than ``cluster.unavailable.timeout.ms``."""


#: error_cb codes that mean "a broker connection failed" (rate-limited, and fed to the watchdog)
CONNECTION_ERRORS = frozenset(
    {
        KafkaError._TRANSPORT,
        KafkaError._ALL_BROKERS_DOWN,
        KafkaError._RESOLVE,
        KafkaError._TIMED_OUT,
        KafkaError._MSG_TIMED_OUT,
    }
)
_CONNECTION_TEXT = re.compile(
    r"connection refused|connect to .* failed|disconnected|brokers are down|transport failure|"
    r"timed out|connection reset|broken pipe|failed to resolve",
    re.IGNORECASE,
)
#: ``host:port``: an IPv4 address, ``localhost`` or a dotted host name (not librdkafka's ``thrd:`` prefix)
_ADDRESS = re.compile(r"(?<![\w.-])((?:\d{1,3}\.){3}\d{1,3}|localhost|[A-Za-z][\w-]*(?:\.[\w-]+)+):(\d{1,5})")


_BROKERS_DOWN = re.compile(r"(\d+)/(\d+) brokers are down")


def all_brokers_down(err: KafkaError) -> bool:
    """A real ``_ALL_BROKERS_DOWN``: librdkafka also raises it as "0/2 brokers are down" while it swaps
    the bootstrap broker for the ones it learned, which is no outage."""
    if err.code() != KafkaError._ALL_BROKERS_DOWN:
        return False
    match = _BROKERS_DOWN.search(err.str())
    # librdkafka raises it when every broker with an address is down: "1/2" can be a real outage (the
    # bootstrap entry has no address once the cluster's brokers are known)
    return match is None or int(match.group(1)) > 0


def _subject(broker: str) -> str:
    return "all brokers" if broker == "cluster" else f"broker {broker}"


def _broker_of(text: str) -> str:
    """``host:port`` a librdkafka message is about (``cluster`` when it names none, e.g. "1/1 brokers
    are down"), so each broker gets its own first line and summary."""
    match = _ADDRESS.search(text)
    return f"{match.group(1)}:{match.group(2)}" if match else "cluster"


class ConnectionLogLimiter:
    """librdkafka ``logger`` and ``error_cb`` for every client of one instance.

    Connection failures: the first per broker is logged as it comes, the next ones only counted, and
    a summary ``broker 127.0.0.1:9092 unreachable (312 more errors in the last 10 s)`` is logged at
    most every ``interval_s`` while they go on; :meth:`reachable_again` logs what was left unreported.
    Other librdkafka lines and errors pass through unchanged (fatal errors always at ERROR).
    """

    def __init__(
        self,
        interval_s: float = 10.0,
        *,
        logger: logging.Logger = rdkafka_log,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.interval_s = interval_s
        self.logger = logger
        self._clock = clock
        self._lock = threading.Lock()
        #: broker -> [suppressed since the last line, time of the last line]
        self._pending: dict[str, list[float]] = {}
        #: every connection error seen, logged or not (for tests and metrics)
        self.total = 0

    # -- librdkafka's ``logger`` protocol: ``logger.log(level, "%s [%s] %s", facility, name, line)``
    def log(self, level: int, msg: str, *args: Any, **kwargs: Any) -> None:
        text = msg % args if args else msg
        if _CONNECTION_TEXT.search(text):
            self._connection_failure(_broker_of(text), text, level)
            return
        self.logger.log(level, "%s", text)

    # -- ``error_cb``
    def on_error(self, err: KafkaError) -> None:
        if err.fatal():
            self.logger.error("fatal Kafka client error: %s", err)
            return
        if err.code() == KafkaError._ALL_BROKERS_DOWN and not all_brokers_down(err):
            self.logger.debug("Kafka client: %s", err.str())
            return
        if err.code() in CONNECTION_ERRORS:
            self._connection_failure(
                _broker_of(err.str()), f"Kafka client error: {err.str()}", logging.WARNING
            )
            return
        self.logger.warning("Kafka client error: %s", err)

    def _connection_failure(self, broker: str, text: str, level: int) -> None:
        now = self._clock()
        with self._lock:
            self.total += 1
            entry = self._pending.get(broker)
            if entry is None or (entry[0] == 0 and now - entry[1] >= self.interval_s):
                # the first failure, or the first after a quiet interval (an idle connection closed)
                self._pending[broker] = [0, now]
                first = True
            else:
                entry[0] += 1
                first = False
                if now - entry[1] < self.interval_s:
                    return
                count, since = entry
                entry[0], entry[1] = 0, now
        if first:
            self.logger.log(level, "%s", text)
        else:
            self._summary(broker, count, now - since)

    def _summary(self, broker: str, count: int, seconds: float) -> None:
        self.logger.warning(
            "%s unreachable (%d more errors in the last %.0f s)", _subject(broker), count, seconds
        )

    def report_pending(self) -> None:
        """At shutdown: the failures counted since the last line, so that the log of an instance that
        gave up on the cluster ends with them instead of losing up to ``interval_s`` of them."""
        now = self._clock()
        with self._lock:
            pending, self._pending = self._pending, {}
        for broker, (count, since) in sorted(pending.items()):
            if count:
                self._summary(broker, count, now - since)

    def reachable_again(self) -> None:
        """The cluster answers again: report what was suppressed, and log the next failure at once."""
        with self._lock:
            pending, self._pending = self._pending, {}
        for broker, (count, _since) in sorted(pending.items()):
            if count:
                self.logger.warning(
                    "%s: %d more connection errors before the cluster answered again", _subject(broker), count
                )


class ClusterWatchdog:
    """How long the cluster has been unreachable, from the stream consumer's broker states.

    ``observe_stats`` (librdkafka statistics, every ``statistics.interval.ms``) is the authority: the
    cluster is reachable while any broker connection is ``UP``. ``connection_error`` (any client's
    ``_ALL_BROKERS_DOWN``) only starts the clock earlier. Thread-safe: callbacks of other clients run
    on their own threads.
    """

    def __init__(
        self, *, lost_after_s: float, give_up_after_s: float, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.lost_after_s = lost_after_s
        self.give_up_after_s = give_up_after_s
        self._clock = clock
        self._lock = threading.Lock()
        self._down_since: float | None = None
        self.brokers: list[str] = []
        #: how many times the cluster became unreachable (a reconnection re-validates the topics)
        self.outages = 0

    def connection_error(self, err: KafkaError) -> None:
        """error_cb of a client that is never idle: a real "all brokers down" starts the clock."""
        if not all_brokers_down(err):
            return
        with self._lock:
            if self._down_since is None:
                self._down_since = self._clock()
                self.outages += 1

    def observe_stats(self, brokers: Mapping[str, Any]) -> None:
        """``brokers``: the ``brokers`` object of librdkafka's statistics JSON."""
        real = {
            name: b for name, b in brokers.items() if isinstance(b, Mapping) and b.get("source") != "logical"
        }
        if not real:
            return
        up = any(b.get("state") == "UP" for b in real.values())
        with self._lock:
            self.brokers = sorted({_broker_of(name) for name in real})
            if up:
                self._down_since = None
            elif self._down_since is None:
                self._down_since = self._clock()
                self.outages += 1

    @property
    def unavailable_for(self) -> float:
        """Seconds since every broker connection has been down (0 while the cluster is reachable)."""
        since = self._down_since
        return 0.0 if since is None else max(0.0, self._clock() - since)

    @property
    def reachable(self) -> bool:
        return self._down_since is None

    @property
    def lost(self) -> bool:
        """Down long enough that the group will have dropped this member (its tasks are lost)."""
        since = self._down_since
        return since is not None and self._clock() - since >= self.lost_after_s

    @property
    def expired(self) -> bool:
        since = self._down_since
        return since is not None and self._clock() - since >= self.give_up_after_s


class PartitionHealth:
    """Partitions of the instance's topics that have no leader, and records waiting for a leader, from
    librdkafka's statistics of each client (the stream consumer, the producer, the sink producer).

    Why: a cluster with a broker down still answers, so the :class:`ClusterWatchdog` sees nothing amiss,
    yet every partition that broker led alone (replication factor 1) has no leader: its records are not
    fetched and sends to it wait until the commit gives up. ``/health`` names those partitions and the
    waiting records while it happens. Each client's last statistics replace its previous ones (so a
    partition that has a leader again drops out at the next interval); the HTTP threads read what the
    librdkafka callbacks wrote (whole-dict swaps, no lock needed).
    """

    def __init__(self) -> None:
        #: client -> ({topic: partitions without a leader}, {topic: records waiting there})
        self._clients: dict[str, tuple[dict[str, list[int]], dict[str, int]]] = {}

    def observe(self, client: str, stats: Mapping[str, Any]) -> None:
        """``stats``: librdkafka's statistics JSON of ``client`` (its ``topics`` and ``brokers``).

        A partition has no leader when its ``leader`` is -1; records wait when a producer queues them
        (``msgq_cnt``, ``xmit_msgq_cnt``, ``msgs_inflight``) for a partition without a leader or whose
        leader's connection is not ``UP`` (a crashed broker keeps its leaderships until it is fenced).
        """
        up = {
            b.get("nodeid")
            for b in (stats.get("brokers") or {}).values()
            if isinstance(b, Mapping) and b.get("state") == "UP"
        }
        leaderless: dict[str, list[int]] = {}
        waiting: dict[str, int] = {}
        for topic, t in (stats.get("topics") or {}).items():
            for pid, p in ((t or {}).get("partitions") or {}).items():
                if not isinstance(p, Mapping) or int(pid) < 0:
                    continue  # -1: librdkafka's queue of records not partitioned yet
                leader = p.get("leader", -1)
                if leader < 0:
                    leaderless.setdefault(topic, []).append(int(pid))
                queued = p.get("msgq_cnt", 0) + p.get("xmit_msgq_cnt", 0) + p.get("msgs_inflight", 0)
                if queued and (leader < 0 or leader not in up):
                    waiting[topic] = waiting.get(topic, 0) + queued
        self._clients = {**self._clients, client: (leaderless, waiting)}

    def leaderless(self) -> dict[str, list[int]]:
        """Every client's partitions without a leader, merged: topic -> sorted partitions."""
        merged: dict[str, set[int]] = {}
        for partitions, _waiting in self._clients.values():
            for topic, ps in partitions.items():
                merged.setdefault(topic, set()).update(ps)
        return {topic: sorted(ps) for topic, ps in sorted(merged.items())}

    def waiting(self) -> dict[str, int]:
        """Records the producers hold for partitions without a (reachable) leader: topic -> count."""
        merged: dict[str, int] = {}
        for _partitions, waiting in self._clients.values():
            for topic, n in waiting.items():
                merged[topic] = merged.get(topic, 0) + n
        return dict(sorted(merged.items()))
