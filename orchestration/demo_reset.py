"""``streamhouse demo --reset``: what the demo owns, what a reset would delete, and deleting it.

Kept apart from the demo's run so that what may be deleted is written down in one place: the lake's
tables and plots, their history in the Dagster instance (never the runs) and the edge apps' local
state, all removed only inside the directories the settings name.
"""

from __future__ import annotations

from typing import Any

from edge.paths import check_application_id, remove_tree_inside, remove_trees_inside
from orchestration.settings import Settings

#: The lake layers the demo writes (and ``reset_demo`` removes): every table of the pipeline.
LAYERS = ("bronze", "silver", "quarantine", "gold")


def reset_targets(settings: Settings, instance: Any, prefix: str) -> str:
    """What ``reset_demo`` would delete now, in one phrase (for the refusal that names ``--reset``)."""
    from dagster import AssetKey

    from assets.edge_apps import EDGE_APPS

    parts: list[str] = []
    tables = [name for name in (*LAYERS, "_plots") if (settings.lake_root / name).exists()]
    if tables:
        parts.append(f"{', '.join(tables)} under {settings.lake_root}")
    keys = [k for k in instance.all_asset_keys() if isinstance(k, AssetKey) and k.path[0] in LAYERS]
    if keys:
        parts.append(f"the history of {len(keys)} assets in {settings.dagster_home}")
    for app in EDGE_APPS:
        path = settings.state_dir / "streams" / f"{prefix}{app.application_id}"
        if path.exists():
            parts.append(str(path))
    return ", ".join(parts) or "nothing yet"


def reset_demo(settings: Settings, instance: Any, prefix: str) -> list[str]:
    """Start over on what the demo owns: the lake's tables and plots, their materialization history in
    the Dagster instance (runs stay, so the UI keeps the record), and the edge apps' local state."""
    from dagster import AssetKey

    from assets.edge_apps import EDGE_APPS

    lake_dirs = [settings.lake_root / name for name in (*LAYERS, "_plots")]
    removed = [str(p) for p in remove_trees_inside(lake_dirs, settings.lake_root, what="the demo's tables")]
    keys = [k for k in instance.all_asset_keys() if isinstance(k, AssetKey) and k.path[0] in LAYERS]
    if keys:
        instance.wipe_assets(keys)
        removed.append(f"the history of {len(keys)} assets in {settings.dagster_home}")
    for app in EDGE_APPS:
        app_id = check_application_id(f"{prefix}{app.application_id}")
        path = settings.state_dir / "streams" / app_id
        if remove_tree_inside(path, settings.state_dir / "streams", what=f"the state of {app_id!r}"):
            removed.append(str(path))
    return removed
