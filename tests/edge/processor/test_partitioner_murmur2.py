import pytest

from edge.processor.partitioner import default_partition, murmur2, to_positive

# Kafka's own vectors (clients UtilsTest.testMurmur2)
KAFKA_VECTORS = [
    (b"21", -973932308),
    (b"foobar", -790332482),
    (b"a-little-bit-long-string", -985981536),
    (b"a-little-bit-longer-string", -1486304829),
    (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
    (b"abc", 479470107),
    (b"", 275646681),
]


@pytest.mark.parametrize(("data", "expected"), KAFKA_VECTORS)
def test_murmur2_matches_kafka(data, expected):
    assert murmur2(data) == expected


def test_default_partition_is_to_positive_modulo():
    assert to_positive(-790332482) == 1357151166
    assert default_partition(b"foobar", 50) == 1357151166 % 50 == 16
    assert all(0 <= default_partition(bytes([i]), 7) < 7 for i in range(256))
