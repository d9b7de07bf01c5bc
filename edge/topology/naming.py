"""Deterministic generated names, as Kafka Streams makes them: ``<PREFIX><10-digit index>`` with one
counter per builder shared by processors and stores. The same DSL code therefore produces the same
names (and internal topic / store names) on every start, and the same names as Kafka Streams for the
same program.

Explicit names consume indices exactly as in Kafka. A processor named with ``named=`` / ``Named`` still
draws its generated index (Kafka's ``NamedInternal.orElseGenerateWithPrefix`` "burns" it for
compatibility), so naming one operator does not renumber the others; a repartition topic always draws
its sink/filter/source indices (``createRepartitionedSource``). What Kafka does *not* draw is not drawn
here either: a store named by ``Materialized.as_`` takes no index (a ``Materialized`` without a name
does, even where the table then stays unmaterialized), ``Repartitioned.as_`` takes no
``KSTREAM-REPARTITION-`` index and a named ``Suppressed`` no ``KTABLE-SUPPRESS-`` index.

Topic and store names are checked like Kafka's (``[a-zA-Z0-9._-]``, at most 249 characters, not ``.``
or ``..``) when an operator declares them, with an error naming the bad name.
"""

from __future__ import annotations

import re
from typing import Any

from edge.errors import TopologyError

SOURCE = "KSTREAM-SOURCE-"
SINK = "KSTREAM-SINK-"
FILTER = "KSTREAM-FILTER-"
MAP = "KSTREAM-MAP-"
MAPVALUES = "KSTREAM-MAPVALUES-"
FLATMAP = "KSTREAM-FLATMAP-"
FLATMAPVALUES = "KSTREAM-FLATMAPVALUES-"
KEY_SELECT = "KSTREAM-KEY-SELECT-"
PEEK = "KSTREAM-PEEK-"
FOREACH = "KSTREAM-FOREACH-"
BRANCH = "KSTREAM-BRANCH-"
MERGE = "KSTREAM-MERGE-"
PROCESSOR = "KSTREAM-PROCESSOR-"
PROCESSVALUES = "KSTREAM-PROCESSVALUES-"
AGGREGATE = "KSTREAM-AGGREGATE-"
REDUCE = "KSTREAM-REDUCE-"
JOIN = "KSTREAM-JOIN-"
LEFTJOIN = "KSTREAM-LEFTJOIN-"
# stream-stream joins (Kafka's KStreamImpl.WINDOWED_NAME, JOINTHIS_NAME, ...)
WINDOWED = "KSTREAM-WINDOWED-"
JOINTHIS = "KSTREAM-JOINTHIS-"
JOINOTHER = "KSTREAM-JOINOTHER-"
OUTERTHIS = "KSTREAM-OUTERTHIS-"
OUTEROTHER = "KSTREAM-OUTEROTHER-"
OUTERSHARED = "KSTREAM-OUTERSHARED-"
REPARTITION = "KSTREAM-REPARTITION-"
TOTABLE = "KSTREAM-TOTABLE-"
KTABLE_SOURCE = "KTABLE-SOURCE-"
KTABLE_FILTER = "KTABLE-FILTER-"
KTABLE_MAPVALUES = "KTABLE-MAPVALUES-"
KTABLE_TOSTREAM = "KTABLE-TOSTREAM-"
KTABLE_SELECT = "KTABLE-SELECT-"
KTABLE_AGGREGATE = "KTABLE-AGGREGATE-"
KTABLE_REDUCE = "KTABLE-REDUCE-"
KTABLE_MERGE = "KTABLE-MERGE-"
KTABLE_JOIN = ("KTABLE-JOINTHIS-", "KTABLE-JOINOTHER-")
KTABLE_LEFTJOIN = ("KTABLE-LEFTTHIS-", "KTABLE-LEFTOTHER-")
KTABLE_OUTERJOIN = ("KTABLE-OUTERTHIS-", "KTABLE-OUTEROTHER-")
KTABLE_SUPPRESS = "KTABLE-SUPPRESS-"
KTABLE_SINK = "KTABLE-SINK-"
# foreign-key table-table joins (Kafka's KTableImpl.FK_JOIN...)
FK_SUBSCRIPTION_REGISTRATION = "KTABLE-FK-JOIN-SUBSCRIPTION-REGISTRATION-"
FK_SUBSCRIPTION_STATE_STORE = "KTABLE-FK-JOIN-SUBSCRIPTION-STATE-STORE-"
FK_SUBSCRIPTION_PROCESSOR = "KTABLE-FK-JOIN-SUBSCRIPTION-PROCESSOR-"
FK_SUBSCRIPTION_RESPONSE = "KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-"
FK_SUBSCRIPTION_RESPONSE_RESOLVER = "KTABLE-FK-JOIN-SUBSCRIPTION-RESPONSE-RESOLVER-PROCESSOR-"
FK_JOIN_OUTPUT = "KTABLE-FK-JOIN-OUTPUT-"
# cogroup (Kafka's CogroupedKStreamImpl.AGGREGATE_NAME / MERGE_NAME)
COGROUP_AGGREGATE = "COGROUPKSTREAM-AGGREGATE-"
COGROUP_MERGE = "COGROUPKSTREAM-MERGE-"
STATE_STORE = "STATE-STORE-"

#: Kafka's ``repartitionTopicNamePrefix.matches("KSTREAM.*-[0-9]{10}")`` (a generated name)
_GENERATED = re.compile(r"KSTREAM.*-[0-9]{10}")
_LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]+$")
#: Kafka's ``Topic.MAX_NAME_LENGTH``
MAX_NAME_LENGTH = 249


def is_generated(name: str) -> bool:
    return bool(_GENERATED.fullmatch(name))


def check_topic_name(name: Any, what: str = "topic") -> str:
    """Kafka's ``Topic.validate``: a legal name or a TopologyError naming it."""
    if not isinstance(name, str):
        raise TopologyError(f"{what} name must be a string, got {name!r}")
    if not name or name in (".", ".."):
        raise TopologyError(f"{what} name {name!r} is illegal: it cannot be empty, '.' or '..'")
    if len(name) > MAX_NAME_LENGTH:
        raise TopologyError(
            f"{what} name {name!r} is illegal: it is {len(name)} characters long, longer than the "
            f"maximum of {MAX_NAME_LENGTH}"
        )
    if not _LEGAL_TOPIC.match(name):
        raise TopologyError(
            f"{what} name {name!r} is not a legal Kafka topic name: it contains a character other than "
            "ASCII alphanumerics, '.', '_' and '-'"
        )
    return name


def check_store_name(name: Any) -> str:
    """Store names become changelog topic names (``<app>-<store>-changelog``): Kafka validates them
    with the same rule (``Named.validate`` / ``Topic.validate``)."""
    return check_topic_name(name, "state store")


class NameGenerator:
    def __init__(self) -> None:
        self._index = 0
        self._used: set[str] = set()

    def _next(self) -> int:
        i = self._index
        self._index += 1
        return i

    def processor(self, prefix: str, explicit: str | None = None) -> str:
        generated = f"{prefix}{self._next():010d}"
        name = explicit if explicit is not None else generated
        if name in self._used:
            raise TopologyError(f"the name {name!r} is used twice; names passed as named= must be unique")
        self._used.add(name)
        return name

    def reserve(self, name: str) -> str:
        """Claim an explicit name that has no generated counterpart (branch outputs)."""
        if name in self._used:
            raise TopologyError(f"the name {name!r} is used twice; names must be unique")
        self._used.add(name)
        return name

    def store(self, prefix: str) -> str:
        return f"{prefix}{STATE_STORE}{self._next():010d}"
