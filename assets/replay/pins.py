"""Pinned input versions: rebuild a table from an input *as it was* at an older Delta version.

Every silver and gold asset reads its inputs pinned at one version taken at the start of the step
(``assets.lineage``), normally the latest. A replay (``streamhouse replay lake --as-of-version``) pins
an input to an older version instead, through the asset config ``input_versions`` (``layer/table`` →
version). Nothing else changes: the day plans already rebuild a day whose watermark is *ahead* of the
version read, and never move a watermark backwards, so incremental runs after a pinned replay keep the
replayed days until a full refresh rebuilds them from the latest input.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

from edge.errors import StreamhouseError

T = TypeVar("T")


class InputPinError(StreamhouseError):
    """An input pinned to a version the table does not have (yet, or any more)."""


def pinned_input(table_uri: str, name: str, pins: Mapping[str, int] | None) -> int | None:
    """The version of input ``name`` (``bronze/orders``) to read: its pin, else the latest (None: no
    table). A pin above the latest version is refused: it would silently read the latest instead."""
    from assets.lineage import pinned_version

    latest = pinned_version(table_uri)
    if not pins or name not in pins:
        return latest
    version = int(pins[name])
    if latest is None:
        raise InputPinError(f"input {name} is pinned to version {version} but {table_uri} does not exist")
    if not 0 <= version <= latest:
        raise InputPinError(
            f"input {name} is pinned to version {version}, but {table_uri} has versions 0..{latest}"
        )
    return version


def pin_inputs(inputs: Sequence[T], pins: Mapping[str, int] | None) -> list[T]:
    """Inputs (objects with ``name``, ``uri`` and ``version``, e.g. ``GoldInput``) with pins applied."""
    if not pins:
        return list(inputs)
    out: list[Any] = []
    for inp in inputs:
        item: Any = inp
        if item.name in pins:
            item = dataclasses.replace(item, version=pinned_input(item.uri, item.name, pins))
        out.append(item)
    return out
