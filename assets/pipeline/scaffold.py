"""``streamhouse pipeline init DIR``: a small pipeline that runs as written, to edit into your own.

A topic, an event table with expectations of each action, a gold aggregate with a chart, and a sample
generator, so ``streamhouse demo --pipeline DIR`` builds its whole lake before a line is changed.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from assets.pipeline.load import DECLARATION
from edge.errors import StreamhouseError

TEMPLATES = Path(__file__).with_name("scaffold")
SCHEMA = Path(__file__).resolve().parents[2] / "docs" / "pipeline.schema.json"


class ScaffoldError(StreamhouseError):
    pass


def pipeline_name(folder: Path) -> str:
    """The folder's name as a pipeline name: lowercase, ``_`` for anything else, a letter first."""
    name = re.sub(r"[^a-z0-9_]+", "_", folder.resolve().name.lower()).strip("_")
    return name if name[:1].isalpha() else f"p_{name}"


def scaffold(folder: Path) -> list[Path]:
    """Write the pipeline's files into ``folder`` (made if missing); never over an existing declaration."""
    if (folder / DECLARATION).exists():
        raise ScaffoldError(
            f"{folder / DECLARATION} already exists; nothing was written (init makes a new pipeline)"
        )
    folder.mkdir(parents=True, exist_ok=True)
    name = pipeline_name(folder)
    module = f"{name}_data"
    values = {
        "name": name,
        "module": module,
        "folder": str(folder),
        "schema": os.path.relpath(SCHEMA, folder.resolve()) if SCHEMA.exists() else "pipeline.schema.json",
    }
    written = []
    for template, target in (("pipeline.yaml.tmpl", DECLARATION), ("data.py.tmpl", f"{module}.py")):
        path = folder / target
        path.write_text((TEMPLATES / template).read_text(encoding="utf-8").format(**values), encoding="utf-8")
        written.append(path)
    return written
