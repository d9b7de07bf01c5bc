"""One worker process of a multi-worker instance (``python -m edge.runtime.worker``).

The supervisor (:mod:`edge.runtime.workers`) writes ``{"app": "MODULE:ATTR", "config": {...},
"worker": i, "log_level": "INFO"}`` to the worker's standard input (not a file or the command line: the
config may hold credentials), and reads one line from its standard output once the app has started:
``{"server": "host:port", "instance": "...", "pid": n}``. Everything else a worker says goes to its
standard error, as ``streamhouse edge run`` does. The exit status is :func:`run_instance`'s.
"""

from __future__ import annotations

import json
import logging
import os
import sys
from typing import Any

from edge.app_spec import load_app_object
from edge.errors import StreamhouseError
from edge.runtime.app import StreamsApp
from edge.runtime.instance import EXIT_FAILED, run_instance

#: the first line a worker writes to its standard output starts with this
READY_PREFIX = "STREAMHOUSE-WORKER "


def main() -> int:
    try:
        spec: dict[str, Any] = json.loads(sys.stdin.read())
    except ValueError as exc:
        print(f"error: a worker needs its JSON spec on standard input: {exc}", file=sys.stderr)
        return EXIT_FAILED
    worker = int(spec.get("worker", 0))
    logging.basicConfig(
        level=str(spec.get("log_level", "INFO")).upper(),
        format=f"%(asctime)s %(levelname)s %(name)s [%(process)d worker {worker}] %(message)s",
    )

    def announce(app: StreamsApp) -> None:
        ready = {"server": app.advertised_server, "instance": app.instance_id, "pid": os.getpid()}
        sys.stdout.write(READY_PREFIX + json.dumps(ready) + "\n")
        sys.stdout.flush()

    try:
        return run_instance(load_app_object(str(spec["app"])), spec["config"], announce=announce)
    except StreamhouseError as exc:  # a mistake in the app or its settings: one line, no traceback
        print(f"error: {exc}", file=sys.stderr)
        return EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
