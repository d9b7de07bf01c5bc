"""docs/pipelines.md as a user reads it: its reference is the model's, its examples say what they show."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from assets.pipeline.reference import END, START, reference_markdown

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "pipelines.md"


def _blocks(kind: str) -> list[str]:
    return re.findall(rf"```{kind}[^\n]*\n(.*?)```", PAGE.read_text(), re.S)


def test_the_reference_is_generated_from_the_model() -> None:
    text = PAGE.read_text()
    generated = text.split(START, 1)[1].split(END, 1)[0]
    assert generated.strip() == reference_markdown().strip(), (
        "run: .venv/bin/python -m assets.pipeline.reference docs/pipelines.md"
    )


def test_the_walk_through_check_prints_what_the_page_shows(tmp_path: Path) -> None:
    bash = next(b for b in _blocks("bash") if "pipeline check" in b)
    command, shown = bash.strip().splitlines()[0], bash.strip().splitlines()[1].removeprefix("# ")
    run = subprocess.run(
        [str(Path(sys.executable).parent / "streamhouse"), *command.split()[1:]],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == shown


def test_the_broken_example_gives_the_problems_the_page_shows(tmp_path: Path) -> None:
    yaml_block = next(b for b in _blocks("yaml") if "partitons" in b)
    first, second = [b.strip() for b in _blocks("text")[:2]]
    shop = tmp_path / "shop"
    shop.mkdir()
    (shop / "pipeline.yaml").write_text(yaml_block)
    streamhouse = str(Path(sys.executable).parent / "streamhouse")
    run = subprocess.run(
        [streamhouse, "pipeline", "check", "shop"], cwd=tmp_path, capture_output=True, text=True
    )
    assert run.returncode == 2 and run.stderr.strip() == first
    (shop / "pipeline.yaml").write_text(yaml_block.replace("partitons", "partitions"))
    again = subprocess.run(
        [streamhouse, "pipeline", "check", "shop"], cwd=tmp_path, capture_output=True, text=True
    )
    assert again.returncode == 2 and second in again.stderr
