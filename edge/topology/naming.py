"""Deterministic generated names, as Kafka Streams makes them: ``<PREFIX><10-digit index>`` with one
counter per builder shared by processors and stores. The same DSL code therefore produces the same
names (and internal topic / store names) on every start; ``named=`` overrides a name without shifting
the others, because a generated index is still consumed (a deliberate difference from Kafka Streams,
where naming one operator renumbers every later generated name).
"""

from __future__ import annotations

import re

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
STATE_STORE = "STATE-STORE-"

_GENERATED = re.compile(r"^(KSTREAM|KTABLE).*-\d{10}$")
_LEGAL_TOPIC = re.compile(r"^[a-zA-Z0-9._-]+$")


def is_generated(name: str) -> bool:
    return bool(_GENERATED.match(name))


def check_topic_name(name: str) -> str:
    if not name or len(name) > 249 or not _LEGAL_TOPIC.match(name) or name in (".", ".."):
        raise TopologyError(
            f"{name!r} is not a legal Kafka topic name (ASCII letters, digits, '.', '_' and '-', "
            f"at most 249 characters)"
        )
    return name


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
