"""YAML that remembers where each value was written, so every error can say ``file:line``.

PyYAML's composer keeps each node's position; building the Python values from the nodes ourselves
lets us record the line of every key and value by its path (``("gold_tables", "revenue", "window")``)
and refuse what plain ``yaml.safe_load`` silently accepts: a key written twice (the last would win).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

Path_ = tuple[str | int, ...]


@dataclass
class Problem:
    """One finding, printed as ``file:line: message``."""

    file: Path
    line: int
    message: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line}: {self.message}"


@dataclass
class YamlSource:
    """A parsed YAML document: its values and the 1-based line of every path in it."""

    file: Path
    data: Any
    lines: dict[Path_, int] = field(default_factory=dict)
    problems: list[Problem] = field(default_factory=list)

    def line_of(self, path: Path_) -> int:
        """The line of the longest prefix of ``path`` written in the file (1 if none is)."""
        for end in range(len(path), 0, -1):
            if (line := self.lines.get(tuple(path[:end]))) is not None:
                return line
        return 1

    def problem(self, path: Path_, message: str) -> Problem:
        return Problem(self.file, self.line_of(path), message)


def load_yaml(file: Path) -> YamlSource:
    """Parse ``file``; syntax errors and repeated keys become problems, never exceptions."""
    source = YamlSource(file, None)
    try:
        text = file.read_text(encoding="utf-8")
    except OSError as exc:
        source.problems.append(Problem(file, 1, f"cannot read: {exc.strerror or exc}"))
        return source
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 1
        source.problems.append(Problem(file, line, f"not valid YAML: {exc.problem or exc}"))
        return source
    if node is None:
        source.data = {}
        return source
    source.data = _build(node, (), source)
    return source


def _build(node: yaml.Node, path: Path_, source: YamlSource) -> Any:
    source.lines.setdefault(path, node.start_mark.line + 1)
    if isinstance(node, yaml.MappingNode):
        out: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            # A key is its text: YAML 1.1 would read `on:` (a join's columns) as the boolean true.
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
            if not isinstance(key, str):
                source.problems.append(
                    Problem(source.file, key_node.start_mark.line + 1, "a key must be a plain scalar")
                )
                continue
            if key in out:
                source.problems.append(
                    Problem(
                        source.file,
                        key_node.start_mark.line + 1,
                        f"{_dotted((*path, key))}: written twice "
                        f"(first on line {source.lines[(*path, key)]})",
                    )
                )
                continue
            source.lines[(*path, key)] = key_node.start_mark.line + 1
            out[key] = _build(value_node, (*path, key), source)
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_build(item, (*path, i), source) for i, item in enumerate(node.value)]
    return _scalar(node)


#: Only its scalar constructors are used (the same resolution ``yaml.safe_load`` applies: ints, floats,
#: booleans, nulls, strings).
_LOADER = yaml.SafeLoader("")


def _scalar(node: yaml.Node) -> Any:
    """A scalar's Python value; a collection used as a key is returned as its node (then refused)."""
    if not isinstance(node, yaml.ScalarNode):
        return node
    return _LOADER.construct_object(node, deep=True)


def _dotted(path: Path_) -> str:
    out = ""
    for part in path:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


dotted = _dotted
