"""Who hosts what: every instance publishes its hosted partitions to ``<application.id>-instances``.

Kafka Streams ships this in the group assignment's user data; librdkafka's built-in assignors leave no
room for that, so each instance publishes a small JSON record (keyed by its instance id) when its
assignment changes and every ``metadata.interval.ms``, and tails the topic from the beginning. An
instance whose last record is older than a few intervals is considered gone; when two live instances
claim a partition (during a rebalance), the most recent claim wins. The same topic carries the
``shutdown_application`` request of the uncaught-exception handler.
"""

from __future__ import annotations

import logging
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import orjson
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition

log = logging.getLogger(__name__)


@dataclass
class InstanceInfo:
    instance_id: str
    server: str
    state: str
    #: subtopology -> partitions
    active: dict[int, list[int]] = field(default_factory=dict)
    standby: dict[int, list[int]] = field(default_factory=dict)
    ts: float = 0.0
    shutdown_requested: bool = False
    #: the consumer's client.id (member ids start with it): orders members like the range assignor
    client_id: str = ""

    def to_json(self) -> bytes:
        return orjson.dumps(
            {
                "instance": self.instance_id,
                "server": self.server,
                "state": self.state,
                "active": {str(k): v for k, v in self.active.items()},
                "standby": {str(k): v for k, v in self.standby.items()},
                "ts": self.ts,
                "shutdown": self.shutdown_requested,
                "client_id": self.client_id,
            }
        )

    @classmethod
    def from_json(cls, data: bytes) -> InstanceInfo:
        d = orjson.loads(data)
        return cls(
            d["instance"],
            d["server"],
            d.get("state", ""),
            {int(k): list(v) for k, v in d.get("active", {}).items()},
            {int(k): list(v) for k, v in d.get("standby", {}).items()},
            float(d.get("ts", 0.0)),
            bool(d.get("shutdown", False)),
            str(d.get("client_id", "")),
        )


class MetadataService:
    """Background thread: publishes this instance's info and tracks everyone else's."""

    def __init__(
        self,
        topic: str,
        producer_config: dict[str, Any],
        consumer_config: dict[str, Any],
        local: InstanceInfo,
        *,
        interval_ms: int,
    ) -> None:
        self.topic = topic
        self.interval_s = interval_ms / 1000
        self.expiry_s = max(3 * self.interval_s, 6.0)
        self._producer = Producer(producer_config)
        conf = dict(consumer_config)
        conf.update(
            {"enable.auto.commit": False, "auto.offset.reset": "earliest", "enable.partition.eof": False}
        )
        self._consumer = Consumer(conf)
        self._consumer.assign([TopicPartition(topic, 0, 0)])
        self._local = local
        self._dirty = threading.Event()
        self._stop = threading.Event()
        self._instances: dict[str, InstanceInfo] = {}
        self._started_at = time.time()
        #: set once every record the topic held at start has been read (who else runs is known)
        self.caught_up = threading.Event()
        self._end_at_start: int | None = None
        self.shutdown_requested_by: str | None = None
        self._thread = threading.Thread(target=self._run, name="streamhouse-metadata", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def update_local(
        self,
        *,
        state: str | None = None,
        active: dict | None = None,
        standby: dict | None = None,
        shutdown: bool | None = None,
    ) -> None:
        local = self._local
        if state is not None:
            local.state = state
        if active is not None:
            local.active = active
        if standby is not None:
            local.standby = standby
        if shutdown is not None:
            local.shutdown_requested = shutdown
        self._dirty.set()

    @property
    def local(self) -> InstanceInfo:
        return self._local

    def _publish(self) -> None:
        self._local.ts = time.time()
        self._producer.produce(self.topic, self._local.to_json(), self._local.instance_id.encode())
        self._producer.poll(0)
        self._instances[self._local.instance_id] = InstanceInfo.from_json(self._local.to_json())

    def _run(self) -> None:
        next_publish = 0.0
        while not self._stop.is_set():
            try:
                now = time.monotonic()
                if self._dirty.is_set() or now >= next_publish:
                    self._dirty.clear()
                    self._publish()
                    next_publish = now + self.interval_s
                if not self.caught_up.is_set() and self._end_at_start is None:
                    self._end_at_start = self._end_offset()
                for msg in self._consumer.consume(500, 0.1):
                    end = self._end_at_start
                    if not self.caught_up.is_set() and end is not None and msg.offset() + 1 >= end:
                        self.caught_up.set()
                    if msg.error() is not None or msg.value() is None:
                        continue
                    try:
                        info = InstanceInfo.from_json(msg.value())
                    except Exception:
                        continue
                    if info.instance_id == self._local.instance_id:
                        continue
                    self._instances[info.instance_id] = info
                    if (
                        info.shutdown_requested
                        and info.ts > self._started_at
                        and self.shutdown_requested_by is None
                    ):
                        self.shutdown_requested_by = info.instance_id
                if self._end_at_start == 0:
                    self.caught_up.set()
            except Exception:
                log.exception("instance metadata thread failed; retrying")
                self._stop.wait(1.0)
        try:
            self._local.state = "NOT_RUNNING"
            self._local.active, self._local.standby = {}, {}
            self._publish()
            self._producer.flush(2)
        except Exception:
            pass

    def _end_offset(self) -> int | None:
        """The topic's end offset, or None while the broker cannot tell yet (asked again next round:
        a topic created a moment ago may have no leader yet)."""
        try:
            return self._consumer.get_watermark_offsets(TopicPartition(self.topic, 0), timeout=5)[1]
        except KafkaException as exc:
            log.debug("end offset of %s not known yet: %s", self.topic, exc)
            return None

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(5)
        try:
            self._consumer.close()
        except Exception:
            pass
        self._producer = None  # type: ignore[assignment]

    # -- queries ----------------------------------------------------------------------------------------
    def live_instances(self) -> list[InstanceInfo]:
        now = time.time()
        out = [self._local]
        for info in list(self._instances.values()):
            if info.instance_id == self._local.instance_id:
                continue
            if now - info.ts <= self.expiry_s and info.state not in ("NOT_RUNNING", "ERROR"):
                out.append(info)
        return out

    def owner_of(self, subtopology: int, partition: int) -> InstanceInfo | None:
        best: InstanceInfo | None = None
        for info in self.live_instances():
            if partition in info.active.get(subtopology, ()):
                if info is self._local:
                    return info  # what we host we know for certain
                if best is None or info.ts > best.ts:
                    best = info
        return best
