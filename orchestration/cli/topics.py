"""``streamhouse topics create|list|produce|tail``: drive and inspect edge apps from a shell.

Topics are always created explicitly (never auto-created), with the broker profile's retention.
"""

from __future__ import annotations

import contextlib
import os
import struct
import sys
import time
import unicodedata
from collections.abc import Iterator
from typing import Any

import click

from edge.errors import StreamhouseError
from edge.kafka import TopicSpec, create_topics
from edge.kafka.admin import BROKER_DEFAULT_REPLICATION
from edge.serde.windowed import MAX_TIME
from orchestration.settings import load_settings


class UnknownTopicError(StreamhouseError):
    """A command named a topic the broker does not have (a user mistake: `error: ...`, exit 2)."""


_SERVERS = click.option(
    "--bootstrap-servers", default=None, help="Kafka servers (default: settings / the embedded broker)."
)


def _client(bootstrap_servers: str | None):  # type: ignore[no-untyped-def]
    return load_settings().kafka_client(bootstrap_servers)


@contextlib.contextmanager
def exit_1_when_records_are_lost() -> Iterator[None]:
    """Turn a :class:`~edge.kafka.delivery.DeliveryError` into one ``error:`` line and exit status 1.

    Lost records are a failure, not a usage mistake (``main`` gives those status 2); every command that
    writes to Kafka (``topics produce``, ``generate``, ``demo``) runs its producing inside this.
    ``STREAMHOUSE_DEBUG=1`` lets the error through, so ``main`` shows its stack trace.
    """
    from edge.kafka.delivery import DeliveryError

    try:
        yield
    except DeliveryError as exc:
        if os.environ.get("STREAMHOUSE_DEBUG"):
            raise
        click.secho(f"error: {exc}", fg="red", err=True)
        sys.exit(exc.exit_code)


@click.group()
def topics() -> None:
    """Create, list, write to and read from Kafka topics."""


@topics.command()
@click.argument("names", nargs=-1, required=True)
@click.option("--partitions", "-p", type=click.IntRange(1, 10_000), default=1, show_default=True)
@click.option(
    "--config", "-c", "configs", multiple=True, metavar="KEY=VALUE", help="Topic config (repeatable)."
)
@click.option(
    "--replication-factor",
    "-r",
    type=int,
    default=BROKER_DEFAULT_REPLICATION,
    callback=lambda _ctx, param, value: _replication_factor(param, value),
    help="Replicas of each partition (default: the broker's default.replication.factor, as Kafka "
    "Streams' replication.factor=-1: 3 on `broker start --brokers 3`, 1 on a single broker).",
)
@_SERVERS
def create(
    names: tuple[str, ...],
    partitions: int,
    configs: tuple[str, ...],
    replication_factor: int,
    bootstrap_servers: str | None,
) -> None:
    """Create topics NAMES (existing ones are left as they are); prints each one's partitions and
    replication factor, so a topic that would not survive a broker down shows it."""
    from confluent_kafka.admin import AdminClient

    config: dict[str, str] = {}
    for item in configs:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"expected KEY=VALUE, got {item!r}", param_hint="--config")
        config[key.strip()] = value.strip()
    client = _client(bootstrap_servers)
    created = create_topics(
        client, [TopicSpec(name, partitions, replication_factor, config=config) for name in names]
    )
    metadata = AdminClient(client.admin()).list_topics(timeout=10).topics
    for name in names:
        partitions_now = metadata[name].partitions.values()
        replicas = min(len(p.replicas) for p in partitions_now)  # what -1 turned into
        shape = f"{len(partitions_now)} partitions, replication factor {replicas}"
        click.echo(f"{name}: {'created' if name in created else 'exists'} ({shape})")


def _replication_factor(param: click.Parameter, value: int) -> int:
    if value < 1 and value != BROKER_DEFAULT_REPLICATION:
        raise click.BadParameter(
            f"{value} is not a replication factor: 1 or more, or -1 for the broker's default", param=param
        )
    return value


@topics.command(name="list")
@_SERVERS
def list_topics(bootstrap_servers: str | None) -> None:
    """List topics and their partition counts."""
    from confluent_kafka.admin import AdminClient

    client = _client(bootstrap_servers)
    metadata = AdminClient(client.admin()).list_topics(timeout=10)
    for name in sorted(metadata.topics):
        click.echo(f"{name}\t{len(metadata.topics[name].partitions)}")


def _non_empty(param: click.Parameter, value: str | None) -> str | None:
    if value == "":
        raise click.BadParameter("must not be empty (e.g. ':' or a tab)", param=param)
    return value


@topics.command()
@click.argument("topic")
@click.option(
    "--key-separator",
    default=None,
    callback=lambda _ctx, param, value: _non_empty(param, value),
    help="Split each line into KEY<sep>VALUE at the first <sep> (default: no key).",
)
@_SERVERS
def produce(topic: str, key_separator: str | None, bootstrap_servers: str | None) -> None:
    """Send each line of standard input to TOPIC as one record (keys partitioned like Kafka's Java client).

    Lines go as the bytes they are (any encoding, binary too) without the line break, as with Kafka's
    console producer; a line larger than the producer's message.max.bytes is not delivered (exit 1).

    Exit 1, with the topic, partition and error, when TOPIC does not exist or a record is not delivered.
    """
    from edge.kafka.delivery import DeliveryTracker

    client = _client(bootstrap_servers)
    with exit_1_when_records_are_lost():
        tracker = DeliveryTracker(client, partitioner="murmur2_random")
        tracker.require_topics([topic])
        separator = key_separator.encode() if key_separator is not None else None
        for raw in sys.stdin.buffer:
            line = raw.rstrip(b"\n")
            key: bytes | None = None
            if separator is not None and separator in line:
                key, line = line.split(separator, 1)
            tracker.produce(topic, line, key)
        sent = tracker.finish()
    click.echo(f"sent {sent} records to {topic}", err=True)


#: Plain formats of keys and values: Kafka's String/Long/Integer serdes, JSON, raw bytes (Python repr).
PLAIN_FORMATS = ["string", "long", "int", "json", "bytes"]
#: Windowed keys as Kafka Streams writes them (``WindowedSerdes``): ``windowed-<f>`` is a time-windowed
#: key (tumbling, hopping, sliding: the key's bytes + 8-byte window start), ``session-<f>`` a
#: session-windowed key (the key's bytes + 8-byte end + 8-byte start); ``<f>`` decodes the key inside.
KEY_FORMATS = [
    *PLAIN_FORMATS,
    *(f"windowed-{f}" for f in PLAIN_FORMATS),
    *(f"session-{f}" for f in PLAIN_FORMATS),
]


def _plain_serde(fmt: str) -> Any:
    from edge.serde import BytesSerde, Serdes

    return BytesSerde() if fmt == "bytes" else getattr(Serdes, fmt)()


def format_serde(fmt: str, window_size_ms: int | None = None) -> Any:
    """The deserializer of ``--key-format``/``--value-format`` ``fmt``. A time-windowed key holds no
    window end: ``window_size_ms`` rebuilds it, else the end is Long.MAX_VALUE, as Kafka's
    ``TimeWindowedDeserializer`` does without ``window.size.ms``."""
    from edge.serde.windowed import SessionWindowedSerde, TimeWindowedSerde

    kind, _, inner = fmt.partition("-")
    if kind == "windowed":
        return TimeWindowedSerde(_plain_serde(inner), window_size_ms)
    if kind == "session":
        return SessionWindowedSerde(_plain_serde(inner))
    return _plain_serde(fmt)


#: Window bounds a detected windowed key may hold: epoch ms from 1970 up to 2100-01-01. Only plausible
#: bounds count, so a text key followed by 8 bytes that happen to look like a long is not taken for one.
_PLAUSIBLE_MS = range(0, 4_102_444_800_000)


def _text(data: bytes) -> str | None:
    """``data`` as text, or None: not UTF-8, or holding control characters (NUL, tab, newline, ...), which
    a terminal would not show as they are (a windowed key's big-endian start always begins with NULs)."""
    try:
        text = data.decode()
    except UnicodeDecodeError:
        return None
    return None if any(unicodedata.category(c) == "Cc" for c in text) else text


class AutoKeyFormat:
    """``topics tail`` without ``--key-format``: text keys as they are, windowed keys recognised.

    A key that is not text (:func:`_text`) but is a non-empty text key followed by one plausible epoch-ms
    time (8 bytes: a time-windowed key, Kafka's ``TimeWindowedSerializer``) or two (16 bytes, end then
    start, start <= end: a session-windowed key) is printed as ``windowed-string``/``session-string``
    would print it; any other key that is not text is printed as its bytes. Each case is told once on
    stderr with the option that decodes it, so the output never changes format without a word. Text
    keys cannot be mistaken for windowed ones: a plausible time's first bytes are NULs.
    """

    def __init__(self, window_size_ms: int | None, note: Any = None) -> None:
        self.window_size_ms = window_size_ms
        self._note = note or (lambda line: click.echo(line, err=True))
        self._told: set[str] = set()

    def deserialize(self, topic: str, data: bytes | None) -> Any:
        from edge.serde.windowed import SessionWindow, TimeWindow, Windowed

        if data is None:
            return None
        text = _text(data)
        if text is not None:
            return text
        if len(data) > 16:
            end, start = struct.unpack_from(">qq", data, len(data) - 16)
            inner = _text(data[:-16])
            if inner and start in _PLAUSIBLE_MS and end in _PLAUSIBLE_MS and start <= end:
                self._tell(
                    "session",
                    "note: keys are session-windowed (key + 8-byte end + 8-byte start), printed as "
                    "[key@start/end] as --key-format session-string does",
                )
                return Windowed(inner, SessionWindow(start, end))
        if len(data) > 8:
            (start,) = struct.unpack_from(">q", data, len(data) - 8)
            inner = _text(data[:-8])
            if inner and start in _PLAUSIBLE_MS:
                size = self.window_size_ms
                self._tell(
                    "windowed",
                    "note: keys are time-windowed (key + 8-byte window start), printed as [key@start/end] "
                    "as --key-format windowed-string does"
                    + (
                        ""
                        if size
                        else "; the end is Long.MAX_VALUE as in Kafka unless --window-size gives the size"
                    ),
                )
                return Windowed(inner, TimeWindow(start, MAX_TIME if size is None else start + size))
        self._tell(
            "bytes",
            "note: keys that are not text are printed as their bytes; --key-format long, int, json, "
            "windowed-<f> or session-<f> decodes them (see `streamhouse topics tail --help`)",
        )
        return data

    def _tell(self, case: str, line: str) -> None:
        if case not in self._told:
            self._told.add(case)
            self._note(line)


def _duration_ms(_ctx: click.Context, param: click.Parameter, value: str | None) -> int | None:
    """``300000``, ``300s``, ``5m``, ``1h``, ``250ms`` → milliseconds."""
    if value is None:
        return None
    units = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}
    number, unit = value.strip(), "ms"
    for suffix in sorted(units, key=len, reverse=True):
        if number.endswith(suffix):
            number, unit = number[: -len(suffix)], suffix
            break
    try:
        ms = int(float(number) * units[unit])
    except ValueError:
        ms = 0
    if ms <= 0:
        raise click.BadParameter(f"{value!r} is not a positive duration (e.g. 300000, 300s, 5m)", param=param)
    return ms


@topics.command()
@click.argument("topic")
@click.option("--max", "max_records", type=click.IntRange(1), default=None, help="Stop after N records.")
@click.option("--timeout", type=float, default=5.0, show_default=True, help="Stop after N idle seconds.")
@click.option(
    "--key-format",
    type=click.Choice(KEY_FORMATS),
    default=None,
    help="How to decode keys. windowed-<f>: a time-windowed key (windowed aggregations' output), "
    "session-<f>: a session-windowed key; printed as Kafka prints Windowed: [key@start/end]. "
    "Default: text keys as text, a text key + window time(s) as windowed-string/session-string, any "
    "other key as its bytes (each told once on stderr).",
)
@click.option(
    "--value-format",
    type=click.Choice(PLAIN_FORMATS),
    default="string",
    show_default=True,
    help="How to decode values (counts are longs).",
)
@click.option(
    "--window-size",
    callback=_duration_ms,
    default=None,
    help="Window size of windowed-<f> keys (ms, or 300s, 5m): their end is start + size; without it "
    "the end is Long.MAX_VALUE, as in Kafka.",
)
@_SERVERS
def tail(
    topic: str,
    max_records: int | None,
    timeout: float,
    key_format: str | None,
    value_format: str,
    window_size: int | None,
    bootstrap_servers: str | None,
) -> None:
    """Print TOPIC from the beginning as KEY<TAB>VALUE, until idle for --timeout seconds.

    A key or value that does not decode in its format is printed as its raw bytes. Without --key-format,
    windowed keys (a windowed aggregation's output) are recognised and printed as [key@start/end]."""
    from confluent_kafka import Consumer, KafkaException, TopicPartition
    from confluent_kafka.admin import AdminClient

    from edge.kafka.admin import topic_partitions

    client = _client(bootstrap_servers)
    partitions = topic_partitions(AdminClient(client.admin()), topic)
    if partitions is None:
        raise UnknownTopicError(f"topic {topic!r} does not exist (see `streamhouse topics list`)")
    serde = format_serde(value_format)
    key_serde = AutoKeyFormat(window_size) if key_format is None else format_serde(key_format, window_size)
    consumer = Consumer(
        client.consumer(f"streamhouse-tail-{time.time_ns()}", **{"enable.auto.commit": False})
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    seen, idle_since = 0, time.monotonic()
    try:
        while time.monotonic() - idle_since < timeout and (max_records is None or seen < max_records):
            for msg in consumer.consume(500, 0.2):
                if msg.error():
                    raise KafkaException(msg.error())
                try:
                    key = key_serde.deserialize(topic, msg.key())
                except Exception:
                    key = msg.key()
                key = "" if key is None else key
                try:
                    value = serde.deserialize(topic, msg.value())
                except Exception:
                    value = msg.value()
                click.echo(f"{key}\t{value}")
                seen += 1
                idle_since = time.monotonic()
                if max_records is not None and seen >= max_records:
                    break
    finally:
        consumer.close()
