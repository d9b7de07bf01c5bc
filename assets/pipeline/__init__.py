"""A lakehouse pipeline as its team declares it: ``pipeline.yaml`` in a folder the team owns.

``load_pipeline(folder)`` gives the one model every asset, check, sensor and command reads;
``check_pipeline(folder)`` gives every problem in it as ``file:line: message``.
"""

from assets.pipeline.load import DECLARATION, PipelineError, check_pipeline, declaration_file, load_pipeline
from assets.pipeline.model import Pipeline
from assets.pipeline.yaml_source import Problem

__all__ = [
    "DECLARATION",
    "Pipeline",
    "PipelineError",
    "Problem",
    "check_pipeline",
    "declaration_file",
    "load_pipeline",
]
