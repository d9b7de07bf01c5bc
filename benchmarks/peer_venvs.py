"""Separate virtualenvs for the Python peers (Bytewax, Pathway), created like ``quix_venv.py`` does.

Each peer pins its own dependencies (Bytewax its Rust runtime, Pathway its engine and a long list of
packages), which must not touch ``.venv``; each lives in ``benchmarks/.venv-<name>`` (git-ignored) and
its flow runs as a child process with that interpreter. A venv is created on first use, with the exact
pin below and a stamp file naming it; when it cannot be created the reason is returned, and the peer is
reported as "not available: <reason>".
"""

from __future__ import annotations

import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
UV = ROOT / ".venv" / "bin" / "uv"


@dataclass(frozen=True)
class PeerVenv:
    """One peer's venv: its name, the exact pins, and the distributions whose versions are recorded."""

    name: str
    pins: tuple[str, ...]
    report: tuple[str, ...]

    @property
    def path(self) -> Path:
        return ROOT / "benchmarks" / f".venv-{self.name}"

    @property
    def python(self) -> Path:
        return self.path / "bin" / "python"

    @property
    def stamp(self) -> Path:
        return self.path / (".installed-" + "-".join(p.replace("==", "_") for p in self.pins))


#: Exact pins: the newest releases on PyPI when the peers were added (`pip index versions ...`,
#: 2026-11-27). Bytewax's Kafka connector runs on confluent-kafka (pinned as in the Quix venv); Pathway
#: reads and writes Kafka with its own Rust client (rdkafka), so only orjson is added there.
BYTEWAX = PeerVenv(
    "bytewax", ("bytewax==0.21.1", "confluent-kafka==2.12.2", "orjson"), ("bytewax", "confluent-kafka")
)
PATHWAY = PeerVenv("pathway", ("pathway==0.33.0", "orjson"), ("pathway",))


def ensure(venv: PeerVenv, *, quiet: bool = True) -> Path | str:
    """The venv's python, creating it if needed; a string is the reason it could not be created."""
    if venv.stamp.exists() and venv.python.exists():
        return venv.python
    out = subprocess.DEVNULL if quiet else None
    try:
        if not venv.python.exists():
            make = (
                [str(UV), "venv", "--python", sys.executable]
                if UV.exists()
                else [sys.executable, "-m", "venv"]
            )
            subprocess.run([*make, str(venv.path)], check=True, stdout=out, stderr=out)
        installer = (
            [str(UV), "pip", "install", "--python", str(venv.python)]
            if UV.exists()
            else [str(venv.python), "-m", "pip", "install", "--quiet"]
        )
        proc = subprocess.run([*installer, *venv.pins], capture_output=True, text=True)
    except OSError as exc:
        return f"could not create {venv.path}: {exc}"
    if proc.returncode != 0:
        tail = " | ".join((proc.stdout + proc.stderr).strip().splitlines()[-3:])[:600]
        py = sys.version.split()[0]
        return f"could not install {' '.join(venv.pins)} into {venv.path} (Python {py}): {tail}"
    venv.stamp.touch()
    return venv.python


def versions(venv: PeerVenv) -> dict[str, str]:
    """The versions actually installed (recorded in results)."""
    code = (
        "import importlib.metadata as m, json, sys;"
        f"print(json.dumps({{p: m.version(p) for p in {list(venv.report)!r}}}))"
    )
    res = subprocess.run([str(venv.python), "-c", code], capture_output=True, text=True, check=True)
    import json

    return json.loads(res.stdout)


if __name__ == "__main__":
    for v in (BYTEWAX, PATHWAY):
        got = ensure(v, quiet=False)
        print(v.name, got, versions(v) if isinstance(got, Path) else "")
