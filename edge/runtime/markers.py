"""Commit markers: how a changelog says which of its records belong to committed input (at-least-once).

Under at-least-once a commit sends the changelog records, waits for their acks, then commits the input
offsets. A crash between the two leaves changelog records whose input was never committed ("orphans"):
replaying that input writes them again, so a restore that applied them would count those records twice.
Kafka Streams accepts that; Streamhouse does not (the store must never be ahead of the committed offsets).

So every at-least-once commit ends each changelog partition it wrote to with a *marker* record: key
:data:`MARKER_KEYS` ``[i]``, value = the task's input positions (next offsets to read) that the commit is
about to commit. A marker is *valid* once the group's committed offsets reached its positions. On
restore, the records up to the last valid marker are the committed state; the records after it are
orphans: they are not applied, and the task sends each orphan key's committed value (or a tombstone)
to the changelog again -- a *compensation* -- before its next commit, so every later reader (restores,
standbys) that does apply the orphans has them undone by the records that follow.

Standbys apply every record, orphans included, and checkpoint at the last marker they saw, valid or
not. A task restored over a standby's directory therefore first reads that checkpointed marker: if it
is not committed (or gone), or if the changelog holds orphans after the last valid marker, the standby
may have applied records of uncommitted input and the store is rebuilt from the changelog instead.

Marker keys alternate between two values per changelog partition (the restored task continues with the
key the last valid marker did not use): a compacted changelog keeps the latest record per key, so the
last valid marker survives a newer, orphaned one. The keys start with a NUL byte and a name no serde
produces; every reader of a changelog skips them. Markers are not written under exactly-once, where the
transaction makes records and offsets atomic.
"""

from __future__ import annotations

from collections.abc import Mapping

import orjson

MARKER_KEYS: tuple[bytes, bytes] = (b"\x00__streamhouse.commit.a", b"\x00__streamhouse.commit.b")
_VERSION = 1


def is_marker(key: bytes | None) -> bool:
    return key == MARKER_KEYS[0] or key == MARKER_KEYS[1]


def encode_marker(positions: Mapping[tuple[str, int], int]) -> bytes:
    """The marker value: ``{"v": 1, "o": [[topic, partition, next offset], ...]}``."""
    return orjson.dumps({"v": _VERSION, "o": [[t, p, o] for (t, p), o in sorted(positions.items())]})


def decode_marker(value: bytes | None) -> dict[tuple[str, int], int] | None:
    """The positions a marker carries, or None when the value is not a marker this version wrote."""
    if not value:
        return None
    try:
        data = orjson.loads(value)
        if data.get("v") != _VERSION:
            return None
        return {(str(t), int(p)): int(o) for t, p, o in data["o"]}
    except (orjson.JSONDecodeError, AttributeError, KeyError, TypeError, ValueError):
        return None


def marker_is_committed(value: bytes | None, committed: Mapping[tuple[str, int], int]) -> bool:
    """Whether the group's ``committed`` offsets reached every position of the marker ``value``.

    A marker without positions (a commit of a task that had consumed nothing: punctuations or
    compensations only) is valid: its state depends on no input.
    """
    positions = decode_marker(value)
    if positions is None:
        return False
    return all(committed.get(tp, -1) >= off for tp, off in positions.items())
