"""The declaration's JSON Schema, generated from the model so editors and the loader agree.

``docs/pipeline.schema.json`` is this output, kept current by a test; a ``pipeline.yaml`` that starts
with ``# yaml-language-server: $schema=<path or URL of it>`` gets completion and validation in editors
that run the YAML language server (VS Code's YAML extension, JetBrains, Neovim).
"""

from __future__ import annotations

import json
from typing import Any

from assets.pipeline.model import Pipeline

SCHEMA_ID = "https://streamhouse.dev/schemas/pipeline.schema.json"


def pipeline_json_schema() -> dict[str, Any]:
    schema = Pipeline.model_json_schema(by_alias=True)
    schema["$schema"] = "https://json-schema.org/draft/2020-12/schema"
    schema["$id"] = SCHEMA_ID
    schema["title"] = "Streamhouse pipeline declaration (pipeline.yaml)"
    return schema


def pipeline_json_schema_text() -> str:
    return json.dumps(pipeline_json_schema(), indent=2, sort_keys=False) + "\n"
