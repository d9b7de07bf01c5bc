"""The interactive SQL shell ``streamhouse sql`` starts when standard input is a terminal.

Statements end with ``;`` and may span lines; ``.tables`` lists the tables and ``.quit`` leaves. A
failing statement prints its error and the shell goes on.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from orchestration.cli.result_writers import write_result

if TYPE_CHECKING:
    from assets.lake import LakeSession


def sql_shell(session: LakeSession, fmt: str, max_rows: int) -> None:
    """A small SQL shell: statements end with `;`, `.tables` lists the tables, `.quit` leaves."""
    from edge.errors import StreamhouseError

    try:
        import readline  # noqa: F401  (line editing and history for input())
    except ImportError:
        pass
    names = session.register_all()
    click.echo(
        f"Streamhouse lake at {session.lake.root}: {len(names)} tables (.tables lists them, .quit leaves)"
    )
    buffer: list[str] = []
    while True:
        try:
            line = input("lake> " if not buffer else "  ..> ")
        except EOFError:
            click.echo()
            return
        except KeyboardInterrupt:
            click.echo()
            buffer.clear()
            continue
        stripped = line.strip()
        if not buffer and stripped in (".quit", ".exit", "\\q", "quit", "exit"):
            return
        if not buffer and stripped == ".tables":
            click.echo("\n".join(session.lake.names()))
            continue
        if not stripped and not buffer:
            continue
        buffer.append(line)
        if not stripped.endswith(";"):
            continue
        text = "\n".join(buffer)
        buffer.clear()
        try:
            reader = session.reader(text)
            try:
                write_result(reader, "table" if fmt == "parquet" else fmt, None, max_rows)
            finally:
                reader.close()
        except StreamhouseError as exc:
            click.secho(f"error: {exc}", fg="red", err=True)
