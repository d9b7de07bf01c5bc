"""Reading a pipeline folder: ``pipeline.yaml`` into a :class:`Pipeline`, or every problem in it.

A user's mistakes come back all at once, each as ``file:line: message`` (unknown keys with a
did-you-mean, wrong types, references to undeclared tables or columns, cycles), never as a traceback:
``streamhouse pipeline check`` prints them and exits 2, and every other entry point raises one
:class:`PipelineError` carrying them.
"""

from __future__ import annotations

import difflib
import types
import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from assets.pipeline.model import Pipeline
from assets.pipeline.references import check_references
from assets.pipeline.yaml_source import Problem, YamlSource, dotted, load_yaml
from edge.errors import StreamhouseError

DECLARATION = "pipeline.yaml"


class PipelineError(StreamhouseError):
    """The declaration cannot be used; ``problems`` holds each finding with its file and line."""

    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        shown = "\n".join(str(p) for p in problems[:20])
        more = f"\n... and {len(problems) - 20} more" if len(problems) > 20 else ""
        noun = "problem" if len(problems) == 1 else "problems"
        super().__init__(f"{len(problems)} {noun} in the pipeline declaration:\n{shown}{more}")


def declaration_file(folder: Path) -> Path:
    """``folder/pipeline.yaml``; a path to the file itself is accepted too."""
    return folder if folder.suffix in (".yaml", ".yml") else folder / DECLARATION


def check_pipeline(folder: Path) -> tuple[Pipeline | None, list[Problem]]:
    """The declaration and every problem found in it (the pipeline is None when it does not parse)."""
    file = declaration_file(folder)
    if not file.exists():
        where = file.parent
        return None, [Problem(file, 1, f"no {file.name} in {where}")]
    source = load_yaml(file)
    if source.problems:
        return None, source.problems
    if not isinstance(source.data, dict):
        return None, [source.problem((), "the declaration must be a mapping (name:, sources:, ...)")]
    try:
        pipeline = Pipeline.model_validate(source.data)
    except ValidationError as exc:
        return None, sorted(_validation_problems(exc, source), key=lambda p: p.line)
    problems = check_references(pipeline, source, file.parent)
    return pipeline, sorted(problems, key=lambda p: p.line)


def load_pipeline(folder: Path) -> Pipeline:
    pipeline, problems = check_pipeline(folder)
    if problems or pipeline is None:
        raise PipelineError(problems)
    return pipeline


def _validation_problems(exc: ValidationError, source: YamlSource) -> list[Problem]:
    problems: list[Problem] = []
    seen: set[tuple[int, str]] = set()
    for error in exc.errors():
        loc = _written_path(tuple(error["loc"]), source)
        message = _message(error, loc, source.data)
        problem = source.problem(loc, message)
        if (problem.line, message) not in seen:
            seen.add((problem.line, message))
            problems.append(problem)
    return problems


def _written_path(loc: tuple[Any, ...], source: YamlSource) -> tuple[Any, ...]:
    """Pydantic's error location without the entries it adds (a union's tag, a validator's name)."""
    path: tuple[Any, ...] = ()
    node = source.data
    for part in loc:
        in_list = isinstance(node, list) and isinstance(part, int) and part < len(node)
        if (isinstance(node, dict) and part in node) or in_list:
            path, node = (*path, part), node[part]
        elif _added_by_pydantic(part, node):
            continue
        elif isinstance(node, dict):
            return (*path, part)  # a missing key: the error is about the mapping that lacks it
        else:
            break
    return path


def _added_by_pydantic(part: Any, node: Any) -> bool:
    """A union member's tag (``range``) or a validator's name (``function-before[...]``) in a location."""
    if not isinstance(part, str):
        return False
    if isinstance(node, dict) and part in (node.get("kind"), node.get("expect")):
        return True
    return "[" in part or "(" in part


def _message(error: dict[str, Any], loc: tuple[Any, ...], data: Any) -> str:
    where = dotted(loc)
    kind = error["type"]
    if kind == "extra_forbidden":
        key = loc[-1] if loc else ""
        allowed = _allowed_keys(loc[:-1], data)
        hint = difflib.get_close_matches(str(key), allowed, n=1, cutoff=0.6)
        suggestion = (
            f"; did you mean {hint[0]!r}?" if hint else (f"; known: {', '.join(allowed)}" if allowed else "")
        )
        return f"{where}: unknown key {key!r}{suggestion}"
    if kind == "missing":
        return f"{where}: required, missing"
    if kind == "union_tag_invalid":
        ctx = error.get("ctx", {})
        return f"{where}: {ctx.get('tag')!r} is not one of {ctx.get('expected_tags')}"
    if kind == "union_tag_not_found":
        return f"{where}: says which kind it is with {error.get('ctx', {}).get('discriminator', 'a tag')}"
    if kind == "literal_error":
        return f"{where}: {error.get('input')!r} is not one of {error.get('ctx', {}).get('expected')}"
    msg = str(error["msg"])
    msg = msg.removeprefix("Value error, ")
    return f"{where}: {msg}"


def _allowed_keys(path: tuple[Any, ...], data: Any) -> list[str]:
    """The keys the model accepts at ``path`` (for did-you-mean), found by walking the type hints
    beside the written data (which picks a union's member by its ``kind``/``expect`` tag)."""
    target: Any = Pipeline
    for part in path:
        target = _model_of(target, data)
        data = data.get(part) if isinstance(data, dict) else (data[part] if isinstance(data, list) else None)
        target = _step(target, part)
        if target is None:
            return []
    model = _model_of(target, data)
    if isinstance(model, type) and issubclass(model, BaseModel):
        return sorted(f.alias or name for name, f in model.model_fields.items())
    return []


def _step(target: Any, part: Any) -> Any:
    if isinstance(target, type) and issubclass(target, BaseModel):
        for name, f in target.model_fields.items():
            if part in (name, f.alias):
                return f.annotation
        return None
    origin = typing.get_origin(target)
    if origin is dict:
        return typing.get_args(target)[1]
    if origin is list:
        return typing.get_args(target)[0]
    return None


def _model_of(target: Any, data: Any) -> Any:
    """``Annotated[X, ...]`` -> X; ``X | None`` -> X; a union of models -> the member ``data`` names."""
    while typing.get_origin(target) is typing.Annotated:
        target = typing.get_args(target)[0]
    if typing.get_origin(target) in (typing.Union, types.UnionType):
        members = [_model_of(m, data) for m in typing.get_args(target) if m is not type(None)]
        if len(members) == 1:
            return members[0]
        for member in members:
            if isinstance(member, type) and issubclass(member, BaseModel) and _tagged(member, data):
                return member
    return target


def _tagged(model: type[BaseModel], data: Any) -> bool:
    if not isinstance(data, dict):
        return False
    for tag in ("kind", "expect"):
        f = model.model_fields.get(tag)
        if f is not None and data.get(tag) in typing.get_args(f.annotation):
            return True
    return False
