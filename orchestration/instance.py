"""The project's Dagster instance directory (``dagster_home``): created with a ``dagster.yaml``.

``streamhouse ui`` (``make dagster``) and ``streamhouse demo`` share the instance at ``dagster_home``.
Without a ``dagster.yaml`` Dagster logs a warning on every start ("No dagster instance configuration
file ... found") and, with telemetry on by default, prints its usage-statistics banner the first time;
neither is something a user of the demo can act on. The file written here is Dagster's defaults made
explicit (storage under the directory itself) with telemetry off. An existing file is the user's and
is never rewritten.
"""

from __future__ import annotations

from pathlib import Path

INSTANCE_FILE = "dagster.yaml"
INSTANCE_YAML = """\
# The Streamhouse project's Dagster instance (`streamhouse ui` / `make dagster`, `streamhouse demo`).
# Runs, event logs and schedules are stored in this directory (Dagster's default storage).
# Written once by Streamhouse; edit freely: an existing file is never overwritten.
telemetry:
  enabled: false
"""


def ensure_instance_dir(dagster_home: Path) -> Path:
    """Create ``dagster_home`` and, when missing, its ``dagster.yaml`` (telemetry off); the file's path."""
    dagster_home.mkdir(parents=True, exist_ok=True)
    config = dagster_home / INSTANCE_FILE
    if not config.exists():
        config.write_text(INSTANCE_YAML)
    return config
