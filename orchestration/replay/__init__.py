"""Replay-driven reprocessing: rebuild lake tables and their downstream (``orchestration.replay.lake``),
as ``streamhouse replay lake`` and the Dagster ``replay_job`` do with the same ``ReplayConfig``
(``orchestration.replay.job``). Resetting an edge app for reprocessing is ``edge.tools.reset``."""
