"""Create the separate benchmark venv for Quix Streams.

Quix Streams pins its own ``confluent-kafka`` (and ``rocksdict``) versions, which differ from the ones
Streamhouse pins, so it can never share ``.venv``. It lives in ``benchmarks/.venv-quix`` (git-ignored) and
the Quix anchor runs as a subprocess with that interpreter.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

#: Exact pin: the newest release on PyPI when the anchor was measured (`pip index versions quixstreams`).
QUIX_VERSION = "3.28.1"

ROOT = Path(__file__).resolve().parent.parent
QUIX_VENV = ROOT / "benchmarks" / ".venv-quix"
QUIX_PYTHON = QUIX_VENV / "bin" / "python"
UV = ROOT / ".venv" / "bin" / "uv"
STAMP = QUIX_VENV / f".installed-quixstreams-{QUIX_VERSION}"


class QuixVenvError(RuntimeError):
    pass


def ensure_quix_venv(*, quiet: bool = True) -> Path:
    """Return the quix venv's python, creating the venv and installing the pinned release if needed."""
    if STAMP.exists() and QUIX_PYTHON.exists():
        return QUIX_PYTHON
    out = subprocess.DEVNULL if quiet else None
    try:
        if not QUIX_PYTHON.exists():
            if UV.exists():
                subprocess.run(
                    [str(UV), "venv", "--python", sys.executable, str(QUIX_VENV)],
                    check=True,
                    stdout=out,
                    stderr=out,
                )
            else:
                subprocess.run(
                    [sys.executable, "-m", "venv", str(QUIX_VENV)], check=True, stdout=out, stderr=out
                )
        installer = (
            [str(UV), "pip", "install", "--python", str(QUIX_PYTHON)]
            if UV.exists()
            else [str(QUIX_PYTHON), "-m", "pip", "install", "--quiet"]
        )
        subprocess.run(
            [*installer, f"quixstreams=={QUIX_VERSION}", "orjson"], check=True, stdout=out, stderr=out
        )
    except (OSError, subprocess.CalledProcessError) as exc:
        raise QuixVenvError(
            f"could not create {QUIX_VENV} with quixstreams=={QUIX_VERSION}: {exc}; "
            "check network access to PyPI or remove the directory and retry"
        ) from exc
    STAMP.touch()
    return QUIX_PYTHON


def quix_versions() -> dict[str, str]:
    """The versions actually installed in the quix venv (recorded in results)."""
    code = (
        "import importlib.metadata as m, json;"
        "print(json.dumps({p: m.version(p) for p in ('quixstreams','confluent-kafka','rocksdict')}))"
    )
    res = subprocess.run([str(QUIX_PYTHON), "-c", code], capture_output=True, text=True, check=True)
    import json

    return json.loads(res.stdout)


if __name__ == "__main__":
    print(ensure_quix_venv(quiet=False))
    print(quix_versions())
