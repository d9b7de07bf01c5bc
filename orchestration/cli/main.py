"""Entry point of the ``streamhouse`` console script.

User mistakes (bad settings, port in use, missing binary, ...) are ``StreamhouseError``s: they are
printed as one readable line and exit with status 2, never as a stack trace. ``STREAMHOUSE_DEBUG=1``
shows the trace for bug reports.
"""

from __future__ import annotations

import os
import sys

import click

from edge.errors import StreamhouseError
from orchestration.cli.broker import broker
from orchestration.cli.demo import demo
from orchestration.cli.edge import edge
from orchestration.cli.generate import generate
from orchestration.cli.lake import describe, sql, tables
from orchestration.cli.pipeline import pipeline
from orchestration.cli.quality import check
from orchestration.cli.replay import replay
from orchestration.cli.topics import topics
from orchestration.cli.ui import ui


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="streamhouse")
def cli() -> None:
    """Streamhouse: Kafka Streams-style edge apps feeding a Dagster + PySpark + Delta lakehouse.

    Settings come from STREAMHOUSE_* environment variables and an optional streamhouse.yaml
    (see docs/configuration.md).
    """


cli.add_command(broker)
cli.add_command(demo)
cli.add_command(generate)
cli.add_command(topics)
cli.add_command(edge)
cli.add_command(tables)
cli.add_command(describe)
cli.add_command(sql)
cli.add_command(check)
cli.add_command(replay)
cli.add_command(ui)
cli.add_command(pipeline)


def main(argv: list[str] | None = None) -> None:
    try:
        cli.main(args=argv, prog_name="streamhouse", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except StreamhouseError as exc:
        if os.environ.get("STREAMHOUSE_DEBUG"):
            raise
        click.secho(f"error: {exc}", fg="red", err=True)
        sys.exit(2)
    except KeyboardInterrupt:
        sys.exit(130)


if __name__ == "__main__":
    main()
