"""Apps the fault trials run as real processes (``streamhouse edge run tests.chaos.apps:<attr>``).

* ``typed_counts``: counts records per key in the RocksDB store ``counts`` (no cache), but only records
  whose value is a JSON object with an integer ``n`` and whose key is present; anything else raises (a
  processing error), and undecodable values fail in the JSON serde (a deserialization error).
* ``counts``: the runtime tests' count (``tests.edge.runtime.apps.count_app:counts``) in a process that
  can be told to die *inside* a commit: when the file named by ``$CHAOS_DIE_FILE`` exists, the next
  commit with input offsets deletes it and SIGKILLs its own process after its changelog records and
  commit markers were acknowledged but before the offsets are committed (at-least-once:
  ``consumer.commit``; exactly-once: ``commit_transaction``). A kill from outside almost never lands in
  that window of a few milliseconds; it is the one that leaves a changelog ending on a commit marker
  that never became valid.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Any

from edge.processor.api import Processor
from edge.processor.record import Record
from edge.serde import Serdes
from edge.state import key_value_store_builder
from edge.topology import Topology


class TypedCount(Processor):
    def init(self, context) -> None:  # type: ignore[no-untyped-def]
        super().init(context)
        self.store = context.get_state_store("counts")

    def process(self, record: Record) -> None:
        if record.key is None:
            raise ValueError("record without a key")
        value = record.value
        if not isinstance(value, dict) or not isinstance(value.get("n"), int):
            raise TypeError(f"expected a JSON object with an integer 'n', got {type(value).__name__}")
        n = (self.store.get(record.key) or 0) + 1
        self.store.put(record.key, n)
        self.context.forward(record.with_value(n))


def typed_counts() -> Topology:
    t = Topology()
    t.add_source("in", os.environ["EDGE_IN"], key_serde=Serdes.string(), value_serde=Serdes.json())
    t.add_processor("count", TypedCount, "in")
    t.add_state_store(
        key_value_store_builder("counts", Serdes.string(), Serdes.long(), caching=False), "count"
    )
    t.add_sink("out", os.environ["EDGE_OUT"], "count", key_serde=Serdes.string(), value_serde=Serdes.long())
    return t


#: the environment variable naming the file that arms a death inside the next commit
DIE_FILE_ENV = "CHAOS_DIE_FILE"


def _die_if_armed() -> None:
    """SIGKILL this process if the die file exists (deleted first, so the restarted process lives)."""
    name = os.environ.get(DIE_FILE_ENV)
    if not name:
        return
    path = Path(name)
    if path.exists():
        path.unlink()
        os.kill(os.getpid(), signal.SIGKILL)


class _DyingCommits:
    """Wraps the committer's consumer or producer: the offset-committing call checks the die file first."""

    def __init__(self, client: Any, method: str) -> None:
        self._client = client
        self._method = method

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._client, name)
        if name != self._method:
            return attr

        def _call(*args: Any, **kwargs: Any) -> Any:
            _die_if_armed()
            return attr(*args, **kwargs)

        return _call


def _install_commit_death() -> None:
    from edge.runtime import commit

    if getattr(commit.Committer, "_chaos_patched", False):
        return
    original = commit.Committer.__init__

    def __init__(self: Any, consumer: Any, producer: Any, collector: Any, **kwargs: Any) -> None:
        if kwargs.get("exactly_once"):
            producer = _DyingCommits(producer, "commit_transaction")
        else:
            consumer = _DyingCommits(consumer, "commit")
        original(self, consumer, producer, collector, **kwargs)

    commit.Committer.__init__ = __init__  # type: ignore[method-assign]
    commit.Committer._chaos_patched = True  # type: ignore[attr-defined]


def counts() -> Topology:
    """The runtime tests' count app, able to die inside a commit (see the module doc)."""
    from tests.edge.runtime.apps.count_app import counts as count_topology

    _install_commit_death()
    return count_topology()
