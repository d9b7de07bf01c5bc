"""The Kafka runtime: runs a topology against Kafka, scales out by consumer group, survives crashes.

Run an app::

    app = StreamsApp(topology_or_builder, {"application.id": "wordcount", "bootstrap.servers": "host:9092"})
    app.start()            # validates, creates internal topics, processes in the background
    ...
    app.close()            # commit, close stores, leave the group

or from the command line: ``streamhouse edge run my.module:topology --application-id wordcount``
(``-c key=value`` for any setting below; SIGTERM/SIGINT shut down gracefully).

Settings (Kafka Streams names): ``application.id`` (consumer group, internal topic prefix, state
subdirectory), ``bootstrap.servers``, ``broker.profile`` (embedded | real), ``state.dir``,
``processing.guarantee`` (at_least_once | exactly_once_v2), ``commit.interval.ms`` (default 30000, or
100 under exactly-once), ``num.standby.replicas``, ``acceptable.recovery.lag`` /
``max.warmup.replicas`` / ``probing.rebalance.interval.ms`` (warm-ups, :mod:`edge.runtime.warmup`),
``upgrade.from`` (2.3 or older: eager rebalancing, :mod:`edge.runtime.assignment`),
``replication.factor`` (internal topics),
``application.server`` (advertised host:port of the query/metrics server; port 0 = free port),
``http.bind.host`` (default 127.0.0.1), ``http.enabled``, ``instance.id`` (stable id; default
persisted in the state dir; names the transactional.id), ``cache.max.bytes.buffering``,
``changelog.collapse`` (default true: stores without the cache log one record per key per commit, not
one per write), ``max.poll.records``, ``poll.ms``, ``restore.batch.records``, ``restore.timeout.ms``,
``metadata.interval.ms``, ``transaction.timeout.ms``, ``default.deserialization.exception.handler`` /
``default.processing.exception.handler`` (fail | continue | dlq), ``errors.dead.letter.queue.topic.name``,
``uncaught.exception.response`` (shutdown_client | shutdown_application | replace_thread),
``default.timestamp.extractor`` (record | log_and_skip | use_partition_time | wallclock | field:<name>;
see :mod:`edge.processor.timestamps`), ``max.task.idle.ms`` (default 0; a task reading several
partitions processes the lowest timestamp first and waits this long for an empty caught-up partition;
-1 never waits), ``buffered.records.per.partition`` (1000), ``idle.stream.time.advance.ms`` (default -1
= off; an extension beyond Kafka Streams: a task quiet for this long of wall-clock time advances its
stream time with the wall clock, so windows on quiet partitions close), and ``consumer.<prop>`` /
``producer.<prop>`` for librdkafka overrides.

Internal topics: ``<application.id>-<store>-changelog`` (compacted, one partition per task),
``<application.id>-<name>`` repartition topics, ``<application.id>-instances`` (who hosts what, for
interactive queries). Producers feeding an app whose stores are queried must partition keys like Kafka's
Java client (librdkafka: ``partitioner=murmur2_random``).
"""

from edge.runtime.app import StreamsApp, resolve_topology
from edge.runtime.config import (
    AT_LEAST_ONCE,
    EXACTLY_ONCE_V2,
    REPLACE_THREAD,
    SHUTDOWN_APPLICATION,
    SHUTDOWN_CLIENT,
    StreamsConfig,
    StreamsConfigError,
)
from edge.runtime.kafka_streams import KafkaStreams, StreamThreadExceptionResponse
from edge.runtime.state import State
from edge.runtime.statedir import StateDirLockedError

__all__ = [
    "AT_LEAST_ONCE",
    "EXACTLY_ONCE_V2",
    "REPLACE_THREAD",
    "SHUTDOWN_APPLICATION",
    "SHUTDOWN_CLIENT",
    "KafkaStreams",
    "State",
    "StateDirLockedError",
    "StreamThreadExceptionResponse",
    "StreamsApp",
    "StreamsConfig",
    "StreamsConfigError",
    "resolve_topology",
]
