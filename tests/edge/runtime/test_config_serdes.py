"""Default serdes are settable by name from the command line (``-c default.value.serde=json``)."""

from __future__ import annotations

import pytest

from edge.runtime.config import StreamsConfig, StreamsConfigError
from edge.serde import Serdes

BASE = {"application.id": "app", "bootstrap.servers": "127.0.0.1:9092"}


def test_named_default_serdes() -> None:
    cfg = StreamsConfig.from_mapping({**BASE, "default.key.serde": "string", "default.value.serde": "JSON"})
    assert cfg.default_key_serde is Serdes.string()
    assert cfg.default_value_serde.deserialize("t", b'{"a": 1}') == {"a": 1}


def test_unknown_serde_name_lists_the_choices() -> None:
    with pytest.raises(StreamsConfigError, match=r"default\.value\.serde must be one of bytes, string"):
        StreamsConfig.from_mapping({**BASE, "default.value.serde": "avro"})
