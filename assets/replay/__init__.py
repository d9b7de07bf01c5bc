"""Replay support inside the assets: reading an input as of a pinned Delta version.

The planning and running of a replay live in ``orchestration/replay``; the assets only need to honour
the ``input_versions`` of their run config (``assets.replay.pins``).
"""
