"""Kafka's default key partitioner (murmur2), so our sinks, the runtime and interactive queries place a
key on exactly the partition a Java producer would.
"""

from __future__ import annotations

_M = 0x5BD1E995
_MASK = 0xFFFFFFFF


def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2``: the signed 32-bit hash the Java client computes."""
    length = len(data)
    h = (0x9747B28C ^ length) & _MASK
    end = length - (length & 3)
    for i in range(0, end, 4):
        k = int.from_bytes(data[i : i + 4], "little")
        k = (k * _M) & _MASK
        k ^= k >> 24
        k = (k * _M) & _MASK
        h = ((h * _M) & _MASK) ^ k
    rem = length & 3
    if rem == 3:
        h ^= data[end + 2] << 16
    if rem >= 2:
        h ^= data[end + 1] << 8
    if rem >= 1:
        h ^= data[end]
        h = (h * _M) & _MASK
    h ^= h >> 13
    h = (h * _M) & _MASK
    h ^= h >> 15
    return h - 0x100000000 if h & 0x80000000 else h


def to_positive(n: int) -> int:
    return n & 0x7FFFFFFF


def default_partition(key_bytes: bytes, num_partitions: int) -> int:
    """Partition of a non-null serialized key, as Kafka's ``BuiltInPartitioner.partitionForKey``."""
    return (murmur2(key_bytes) & 0x7FFFFFFF) % num_partitions
