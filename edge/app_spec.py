"""``MODULE:ATTR`` names an edge app: how a command line, or a worker process, finds the topology.

Worker processes cannot be handed a topology (its lambdas do not pickle), so every process loads the
app itself from the same spec; the command line and the workers share this one loader.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path
from typing import Any

from edge.errors import StreamhouseError


class AppLoadError(StreamhouseError):
    """The app spec does not name a module attribute that can be loaded."""


def load_app_object(spec: str) -> Any:
    """The object ``MODULE:ATTR`` names (a Topology, a StreamsBuilder or a function returning one)."""
    module_name, sep, attr = spec.partition(":")
    if not sep or not module_name or not attr:
        raise AppLoadError(f"expected MODULE:ATTR (e.g. myapp.wordcount:topology), got {spec!r}")
    if str(Path.cwd()) not in sys.path:
        sys.path.insert(0, str(Path.cwd()))
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and module_name.startswith(exc.name):
            raise AppLoadError(f"module {module_name!r} not found (is it on PYTHONPATH?)") from exc
        raise
    obj: Any = module
    for part in attr.split("."):
        if not hasattr(obj, part):
            raise AppLoadError(f"module {module_name!r} has no attribute {attr!r}")
        obj = getattr(obj, part)
    return obj
