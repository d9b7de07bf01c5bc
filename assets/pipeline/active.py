"""The pipeline this process runs: the one every asset, check, sensor and command is built from.

Named by the ``pipeline`` setting (``STREAMHOUSE_PIPELINE``, else ``pipeline:`` in streamhouse.yaml),
a folder holding ``pipeline.yaml``; unset, the demo's (``pipelines/demo`` of this checkout). Read through the
settings-free locator (:mod:`edge.home`) for the reason the partitions' start is: the asset
definitions are built when their modules are imported, and ``assets/`` must not import the settings
in ``orchestration/``. ``orchestration.definitions`` compares it with the loaded settings.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping
from functools import cache
from pathlib import Path

from assets.pipeline.load import load_pipeline
from assets.pipeline.model import Pipeline
from edge.home import config_value, resolve_path

#: The demo's declaration, shipped beside the code (not under a project home a user may point elsewhere).
DEFAULT_PIPELINE = Path(__file__).resolve().parents[2] / "pipelines" / "demo"


def pipeline_folder(environ: Mapping[str, str] | None = None) -> Path:
    """The folder of the configured pipeline, absolute (a relative setting is the project home's)."""
    value = config_value("pipeline", environ)
    return resolve_path(str(value), environ) if value else DEFAULT_PIPELINE


@cache
def active_pipeline() -> Pipeline:
    """The configured pipeline, loaded once per process (a bad declaration raises PipelineError with
    every problem as ``file:line: message``). Its folder is importable from then on, so the Python
    modules it names (``module:function``) are found as ``pipeline check`` found them."""
    folder = pipeline_folder()
    pipeline = load_pipeline(folder)
    if str(folder) not in sys.path:
        sys.path.append(str(folder))
    return pipeline
