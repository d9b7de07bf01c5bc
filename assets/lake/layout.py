"""Where a lake table lives: ``<lake_root>/<layer>/<name>``, computed here and nowhere else.

Every layer (bronze, silver, quarantine, gold) keeps its tables under one directory of the lake root,
a local path or an object-store URI; the catalogue discovers tables by walking the same layout.
"""

from __future__ import annotations

import os

#: The layers a lake holds, in the order data flows.
LAYERS = ("bronze", "silver", "quarantine", "gold")


def table_uri(lake_root: str | os.PathLike[str], layer: str, name: str) -> str:
    """``<lake_root>/<layer>/<name>``, with no doubled slash whatever the root ends with."""
    return f"{os.fspath(lake_root).rstrip('/')}/{layer}/{name}"


def path_uri(lake_root: str | os.PathLike[str], path: str) -> str:
    """A table named ``layer/name`` (lineage's spelling) or ``layer.name`` (the catalogue's)."""
    layer, _, name = path.replace(".", "/", 1).partition("/")
    return table_uri(lake_root, layer, name)
