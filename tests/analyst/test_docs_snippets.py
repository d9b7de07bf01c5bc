"""Every code block in README.md and docs/ runs as pasted (or says which test runs it instead).

A newcomer copies the README's blocks into a shell or a notebook; a block that lacks an import or names
an option that no longer exists is the first thing they meet. By fence language:

* ``python``: executed, in a notebook-like namespace that holds ``spark`` (the session), with the
  environment a reader has after ``streamhouse broker start`` (the broker and lake found by settings);
* ``bash``: every ``streamhouse`` command is parsed by the CLI itself (command, options, arguments)
  and every ``make`` target must exist; a block fenced ``bash run`` is executed as a script;
* ``yaml``: a settings file, loaded by ``load_settings``; ``sql``: run over the lake;
* ``python no-run <test file>`` / ``bash no-run <test file>``: a block that starts something long (a
  cluster) names the test that runs it, which must exist; ``python fragment``: an excerpt under
  discussion in the engineering notes (``docs/notes/``), nowhere else;
* anything else (output samples, diagrams) is text.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

import click
import pytest

from tests.analyst.conftest import AnalystLake

pytestmark = pytest.mark.spark

ROOT = Path(__file__).resolve().parents[2]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
_FENCE = re.compile(r"^```([^\n]*)\n(.*?)^```", re.MULTILINE | re.DOTALL)


@dataclass(frozen=True)
class Block:
    path: Path
    line: int
    info: str
    code: str

    @property
    def lang(self) -> str:
        return self.info.split(" ", 1)[0] if self.info else ""

    @property
    def mode(self) -> str:
        words = self.info.split()
        return words[1] if len(words) > 1 else ""

    def __str__(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line} ({self.info or 'text'})"


def _blocks() -> list[Block]:
    out = []
    for path in DOCS:
        text = path.read_text()
        for m in _FENCE.finditer(text):
            out.append(Block(path, text[: m.start()].count("\n") + 1, m.group(1).strip(), m.group(2)))
    return out


BLOCKS = _blocks()


def _ids(kind: str) -> list[Block]:
    return [b for b in BLOCKS if b.lang == kind]


def _commands(code: str) -> list[str]:
    """The logical lines of a shell block: continuations and quotes spanning lines joined, comments and
    blank lines dropped."""
    lines, current = [], ""
    for raw in code.splitlines():
        line = raw.rstrip()
        if line.endswith("\\"):
            current += line[:-1] + " "
            continue
        current += line
        try:
            shlex.split(current, comments=True)
        except ValueError:  # a quote still open: the command goes on on the next line
            current += "\n"
            continue
        if current.strip() and not current.strip().startswith("#"):
            lines.append(current)
        current = ""
    assert not current.strip(), f"unterminated shell command: {current!r}"
    return lines


def _streamhouse_args(command: str) -> list[list[str]]:
    """The argument lists of every ``streamhouse`` invocation in one shell line (pipes, ``&&``, ``&``)."""
    out = []
    try:
        words = shlex.split(command, comments=True)
    except ValueError as exc:
        raise AssertionError(f"not valid shell: {command!r}: {exc}") from None
    current: list[str] | None = None
    for word in [*words, "|"]:
        if word in ("|", "&&", "||", ";", "&"):
            if current is not None:
                out.append(current)
            current = None
        elif word == "streamhouse" and current is None:
            current = []
        elif current is not None:
            current.append(word)
    return out


def _parse(args: list[str]) -> None:
    """Let the CLI parse ``args`` down to the command it names (options and arguments checked), without
    running it."""
    from orchestration.cli.main import cli

    ctx = cli.make_context("streamhouse", list(args), resilient_parsing=False)
    command: click.Command = cli
    while isinstance(command, click.Group) and ctx.protected_args:
        name, *rest = [*ctx.protected_args, *ctx.args]
        sub = command.get_command(ctx, name)
        assert sub is not None, f"streamhouse has no command {name!r}"
        ctx = sub.make_context(name, rest, parent=ctx, resilient_parsing=False)
        command = sub


def test_the_docs_have_blocks_of_every_kind():
    kinds = {b.lang for b in BLOCKS}
    assert {"python", "bash", "yaml", "sql"} <= kinds, kinds


def test_fragments_are_only_in_the_engineering_notes():
    misplaced = [str(b) for b in BLOCKS if b.mode == "fragment" and "docs/notes/" not in str(b.path)]
    assert not misplaced, misplaced


@pytest.mark.parametrize("block", [b for b in BLOCKS if b.mode == "no-run"], ids=str)
def test_a_block_that_is_not_run_here_names_the_test_that_runs_it(block: Block):
    named = block.info.split()[2:]
    assert named and all((ROOT / n).is_file() for n in named), f"{block}: name an existing test file"


@pytest.mark.parametrize("block", [b for b in _ids("bash") if b.mode not in ("no-run", "fragment")], ids=str)
def test_shell_blocks_name_commands_and_options_that_exist(block: Block):
    makefile = (ROOT / "Makefile").read_text()
    for command in _commands(block.code):
        for make_target in re.findall(r"(?:^|[;&|]\s*)make\s+([\w-]+)", command):
            assert re.search(rf"^{re.escape(make_target)}:", makefile, re.MULTILINE), (
                f"{block}: make {make_target} is no target"
            )
        for args in _streamhouse_args(command):
            try:
                _parse(args)
            except click.ClickException as exc:
                raise AssertionError(
                    f"{block}: `streamhouse {' '.join(args)}`: {exc.format_message()}"
                ) from None


@pytest.mark.parametrize("block", [b for b in _ids("yaml") if b.mode not in ("no-run", "fragment")], ids=str)
def test_yaml_blocks_are_valid_settings_files(block: Block, tmp_path: Path):
    from orchestration.settings import load_settings

    path = tmp_path / "streamhouse.yaml"
    path.write_text(block.code)
    load_settings({}, config_file=path, base=tmp_path)


@pytest.mark.parametrize("block", [b for b in _ids("sql") if b.mode not in ("no-run", "fragment")], ids=str)
def test_sql_blocks_run_over_the_lake(block: Block, lake_env: AnalystLake):
    from assets.lake import sql

    sql(block.code, lake_root=lake_env.root)


def _filtering_queries() -> list[tuple[Block, str]]:
    """The queries with a WHERE in the docs' ``streamhouse sql "..."`` commands and ``sql("...")`` calls."""
    out = []
    for block in BLOCKS:
        if block.mode in ("no-run", "fragment"):
            continue
        if block.lang == "bash":
            for command in _commands(block.code):
                for args in _streamhouse_args(command):
                    queries = [a for a in args[1:] if a.lstrip().upper().startswith("SELECT")]
                    out += [(block, q) for q in queries if args[:1] == ["sql"] and " WHERE " in q]
        elif block.lang == "python":
            out += [(block, q) for q in re.findall(r'\bsql\("([^"]+ WHERE [^"]+)"', block.code)]
    return out


@pytest.mark.parametrize(("block", "query"), _filtering_queries(), ids=lambda v: str(v)[:60])
def test_filtering_examples_find_rows_on_any_data(block: Block, query: str, lake_env: AnalystLake):
    """Issue 46 item 9: the examples filtered on `DATE '2026-01-05'`, a day the demo's data (the three
    days before it ran) never has, so a reader pasting them saw no rows. They pick the day from the data
    (here a lake of other days than the demo's or the examples' old ones)."""
    from assets.lake import sql

    rows = sql(query, lake_root=lake_env.root)
    assert len(rows) > 0, f"{block}: {query!r} finds no rows"


@pytest.mark.broker
@pytest.mark.parametrize(
    "block", [b for b in _ids("python") if b.mode not in ("no-run", "fragment")], ids=str
)
def test_python_blocks_run_as_pasted(block: Block, lake_env: AnalystLake, kafka_broker, spark, monkeypatch):
    """In a notebook-like namespace that has ``spark``, with the environment of a reader whose broker
    is the recorded one (here the test session's) and whose lake holds the tables the docs use."""
    from assets.sample_data import topic_specs
    from edge.kafka import TopicSpec, create_topics

    monkeypatch.setenv("STREAMHOUSE_BOOTSTRAP_SERVERS", kafka_broker.bootstrap_servers)
    monkeypatch.setenv("STREAMHOUSE_BROKER_PROFILE", kafka_broker.profile.value)
    monkeypatch.chdir(ROOT)
    topics = set(re.findall(r'builder\.stream\("([\w.-]+)"', block.code))
    if topics:  # the topics a snippet reads exist on a reader's broker (the demo's, as the demo makes them:
        # the session's other tests use the sample topics under their names too)
        samples = {spec.name: spec for spec in topic_specs()}
        create_topics(kafka_broker, [samples.get(t, TopicSpec(t, 1)) for t in sorted(topics)])
    exec(compile(block.code, str(block), "exec"), {"__name__": "__docs__", "spark": spark})


@pytest.mark.broker
@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize("block", [b for b in _ids("bash") if b.mode == "run"], ids=str)
def test_runnable_shell_blocks_run_as_pasted(block: Block, tmp_path: Path):
    """A walkthrough block, executed as a script by bash in a fresh state dir (its own broker).

    The broker runs before the block, as for a reader with `make dagster` open, and still runs after
    it (issue 46 item 5): the README's edge block ended with `streamhouse broker stop`, which stopped the
    broker the open UI's sensor was watching."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("STREAMHOUSE_")}
    bin_dir = str(Path(os.sys.executable).parent)
    env.update(
        {
            "STREAMHOUSE_STATE_DIR": str(tmp_path / "state"),
            "STREAMHOUSE_BROKER_KIND": os.environ.get("STREAMHOUSE_BROKER_KIND", "tansu"),
            "PATH": f"{bin_dir}:{env.get('PATH', '')}",
        }
    )
    script = "set -euo pipefail\n" + block.code.replace("source .venv/bin/activate", ":")

    def shell(command: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["bash", "-c", command], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60
        )

    try:
        started = shell("streamhouse broker start")
        assert started.returncode == 0, started.stdout + started.stderr
        before = shell("streamhouse broker status")
        done = subprocess.run(
            ["bash", "-c", script], cwd=ROOT, env=env, capture_output=True, text=True, timeout=240
        )
        after = shell("streamhouse broker status")
    finally:
        shell("streamhouse broker stop || true")
    assert done.returncode == 0, f"{block} failed:\n{done.stdout[-2000:]}\n{done.stderr[-3000:]}"
    pid = re.search(r"pid (\d+)", before.stdout)
    assert before.returncode == 0 and pid, before.stdout
    assert after.returncode == 0 and f"pid {pid.group(1)}," in after.stdout, (
        f"{block} stopped the broker it did not start: {after.stdout}"
    )


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_the_readme_is_one_screen_and_every_link_lands():
    """The README is what a newcomer reads first (the reference lives in docs/); a link that lands
    nowhere is a dead end."""
    assert len((ROOT / "README.md").read_text().splitlines()) <= 200
    broken = []
    for path in DOCS:
        text = path.read_text()
        for target, anchor in re.findall(r"\]\(((?!https?:|mailto:)[^)#\s]*)(?:#([^)\s]+))?\)", text):
            file = (path.parent / target).resolve() if target else path
            if not file.exists():
                broken.append(f"{path.relative_to(ROOT)}: {target}")
                continue
            if anchor and file.suffix == ".md":
                anchors = {_slug(h) for h in re.findall(r"^#+ (.+)$", file.read_text(), re.MULTILINE)}
                if anchor not in anchors:
                    broken.append(f"{path.relative_to(ROOT)}: {target}#{anchor}")
    assert not broken, broken
