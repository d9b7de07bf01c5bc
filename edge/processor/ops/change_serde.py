"""Serde for KTable ``Change`` pairs on repartition topics (KTable.group_by sends new and old values).

Layout: one flag byte (1 = new present, 2 = old present); with both present, a 4-byte big-endian length
of the new value's bytes follows, then the new bytes, then the old bytes.
"""

from __future__ import annotations

import struct

from edge.errors import SerdeError
from edge.processor.record import Change
from edge.serde import Serde

_LEN = struct.Struct(">I")


class ChangeSerde:
    __slots__ = ("inner",)

    def __init__(self, inner: Serde) -> None:
        self.inner = inner

    def serialize(self, topic: str, change: Change | None) -> bytes | None:
        if change is None:
            return None
        new = None if change.new is None else self.inner.serialize(topic, change.new)
        old = None if change.old is None else self.inner.serialize(topic, change.old)
        if new is not None and old is not None:
            return b"\x03" + _LEN.pack(len(new)) + new + old
        if new is not None:
            return b"\x01" + new
        if old is not None:
            return b"\x02" + old
        return b"\x00"

    def deserialize(self, topic: str, data: bytes | None) -> Change | None:
        if data is None:
            return None
        if not data:
            raise SerdeError("empty Change payload on a KTable repartition topic", topic=topic)
        flag = data[0]
        de = self.inner.deserialize
        if flag == 3:
            (n,) = _LEN.unpack_from(data, 1)
            return Change(de(topic, data[5 : 5 + n]), de(topic, data[5 + n :]))
        if flag == 1:
            return Change(de(topic, data[1:]), None)
        if flag == 2:
            return Change(None, de(topic, data[1:]))
        if flag == 0:
            return Change(None, None)
        raise SerdeError(f"unknown Change flag {flag} on a KTable repartition topic", topic=topic)

    def __repr__(self) -> str:
        return f"ChangeSerde({self.inner!r})"
