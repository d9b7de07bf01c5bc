"""Where the project's files are: its home, its settings file, and paths relative to the home.

One settings-free locator for every layer. ``orchestration.settings`` parses and validates the
settings, but ``assets/`` must not import ``orchestration/`` and a notebook or an edge app must not
need Dagster or pydantic to find the lake, so the few values those read themselves (the lake root,
the first partition) are looked up here with the same precedence and the same home:

* the **project home** is ``$STREAMHOUSE_HOME``, else the checkout this code runs from (the directory
  holding ``pyproject.toml`` and ``orchestration/``), else (an installed wheel) the working directory;
* the **settings file** is ``$STREAMHOUSE_CONFIG``, else ``streamhouse.yaml`` in the working directory,
  else the one in the project home, if present;
* a **value** is ``STREAMHOUSE_<KEY>``, else the key in that file, else the caller's default;
* a **relative path** resolves against the project home, never the working directory, so every
  command finds the same lake and broker record from any directory.

It lives at the bottom of the import graph (``edge/``, which imports nothing above it) and reads
YAML leniently: an unreadable or malformed file yields no value here, and the settings, which read
the same file strictly, report it with the key and the file named.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

HOME_ENV = "STREAMHOUSE_HOME"
CONFIG_ENV = "STREAMHOUSE_CONFIG"
CONFIG_FILE = "streamhouse.yaml"
ENV_PREFIX = "STREAMHOUSE_"
_CHECKOUT = Path(__file__).resolve().parents[1]


def project_home(environ: Mapping[str, str] | None = None) -> Path:
    """Where relative paths (``.state``, ``.state/lake``, ...) and a fallback streamhouse.yaml live."""
    environ = os.environ if environ is None else environ
    if environ.get(HOME_ENV):
        return Path(environ[HOME_ENV]).expanduser().resolve()
    if (_CHECKOUT / "pyproject.toml").is_file() and (_CHECKOUT / "orchestration").is_dir():
        return _CHECKOUT
    return Path.cwd()


def config_path(environ: Mapping[str, str] | None = None, home: Path | None = None) -> Path | None:
    """The settings file to read: ``$STREAMHOUSE_CONFIG`` as given (whether or not it exists: naming a
    missing file is an error the settings report), else the first existing of ``./streamhouse.yaml``
    and ``<home>/streamhouse.yaml`` (``home`` defaults to :func:`project_home`), else None."""
    environ = os.environ if environ is None else environ
    if environ.get(CONFIG_ENV):
        return Path(environ[CONFIG_ENV])
    home = home if home is not None else project_home(environ)
    return next((p for p in (Path(CONFIG_FILE), home / CONFIG_FILE) if p.is_file()), None)


def config_value(key: str, environ: Mapping[str, str] | None = None) -> Any:
    """``STREAMHOUSE_<KEY>`` if set and non-empty, else ``key`` in the settings file (as YAML parsed
    it: a date stays a ``date``), else None; an unreadable or malformed file counts as absent."""
    environ = os.environ if environ is None else environ
    raw = environ.get(ENV_PREFIX + key.upper())
    if raw:
        return raw
    path = config_path(environ)
    if path is None or not path.is_file():
        return None
    import yaml

    try:
        data = yaml.safe_load(path.read_text()) or {}
    except (OSError, UnicodeDecodeError, yaml.YAMLError):
        return None
    return data.get(key) if isinstance(data, dict) else None


def resolve_path(value: str | os.PathLike[str], environ: Mapping[str, str] | None = None) -> Path:
    """``value`` made absolute against the project home (``~`` expanded; absolute paths kept)."""
    path = Path(value).expanduser()
    return path if path.is_absolute() else (project_home(environ) / path).resolve()
