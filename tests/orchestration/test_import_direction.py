"""Imports only go down: ``orchestration/`` → ``assets/`` + ``quality/`` → ``edge/``.

``edge/`` must deploy without Spark or Dagster and ``assets/`` must take its resources rather than
build them from settings, so a stray upward import (often a convenience import of a resource or a
partition definition) is a layering bug even when it happens to work. Read from the source (AST),
including imports inside functions, so nothing has to be imported to check it. The partition start
moved below ``orchestration/`` with the partitions, so its resolution is tested here as well.

Modules must not import each other in a cycle either, in any layer: a cycle means neither module can
be understood, tested or moved without the other, and it is usually a missing small shared module
(a helper one side borrows from the other). Function-level imports count (they only defer the cycle
to run time); imports under ``if TYPE_CHECKING:`` do not (they never run).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: the packages whose modules are checked for import cycles
LAYERS = ("edge", "assets", "quality", "orchestration")

#: package -> top-level packages it must never import
FORBIDDEN = {
    "edge": {"assets", "quality", "orchestration"},
    "assets": {"orchestration", "quality"},
    "quality": {"orchestration"},
}


def _parse(source: str, filename: str, attempts: int = 3) -> ast.Module:
    """``ast.parse``, again when CPython 3.11 raises its spurious "AST constructor recursion depth
    mismatch" (CPython issue 106905, fixed in 3.11.8 and 3.12.1): the depth counter is shared between
    threads, and a thread left by an earlier test (a Data Docs build, a Dagster daemon) may be
    compiling at the same moment. A real syntax error raises SyntaxError, never this."""
    for attempt in range(attempts):
        try:
            return ast.parse(source, filename=filename)
        except SystemError as exc:
            if "recursion depth mismatch" not in str(exc) or attempt == attempts - 1:
                raise
    raise AssertionError("unreachable")


def imported_packages(path: Path) -> list[tuple[int, str]]:
    """(line, top-level package) of every absolute import in ``path``."""
    tree = _parse(path.read_text(), str(path))
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name.split(".")[0]) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module.split(".")[0]))
    return found


def violations(package: str) -> list[str]:
    forbidden = FORBIDDEN[package]
    out = []
    for path in sorted((ROOT / package).rglob("*.py")):
        for line, top in imported_packages(path):
            if top in forbidden:
                out.append(f"{path.relative_to(ROOT)}:{line} imports {top}")
    return out


@pytest.mark.parametrize("package", sorted(FORBIDDEN))
def test_imports_only_go_down(package: str) -> None:
    assert (ROOT / package).is_dir()
    assert violations(package) == []


def test_the_scan_sees_upward_imports(tmp_path: Path) -> None:
    """The checker itself: module-level, aliased and function-local imports are all caught."""
    source = tmp_path / "bad.py"
    source.write_text(
        "import orchestration.settings as s\n"
        "from assets.delta import read_arrow\n"
        "def f():\n"
        "    from quality.checks import QUALITY_CHECKS\n"
        "from . import sibling\n"
    )
    assert [top for _, top in imported_packages(source)] == ["orchestration", "assets", "quality"]


def test_partitions_start_follows_the_settings_precedence(tmp_path: Path) -> None:
    """``assets.partitions`` reads ``partitions_start`` itself (it cannot import the settings), with
    the same precedence: environment, then the config file, then the default; a malformed value falls
    back to the default there and fails in the definitions, which compare it with the settings."""
    from assets.partitions import configured_start, default_start

    config = tmp_path / "streamhouse.yaml"
    config.write_text("partitions_start: 2025-03-01\n")
    home = {"STREAMHOUSE_HOME": str(tmp_path / "nowhere")}
    assert configured_start({**home, "STREAMHOUSE_CONFIG": str(config)}) == "2025-03-01"
    env = {**home, "STREAMHOUSE_CONFIG": str(config), "STREAMHOUSE_PARTITIONS_START": "2024-12-31"}
    assert configured_start(env) == "2024-12-31"
    assert configured_start({"STREAMHOUSE_HOME": str(tmp_path)}) == "2025-03-01"  # the home's file
    assert configured_start(home) == default_start(home)
    assert configured_start({**home, "STREAMHOUSE_PARTITIONS_START": "June"}) == default_start(home)


def test_definitions_refuse_settings_that_disagree_with_the_partitions() -> None:
    from datetime import date

    from assets.partitions import PARTITION_START
    from orchestration.definitions import build_definitions
    from orchestration.settings import Settings, SettingsError

    other = date.fromisoformat(PARTITION_START).replace(year=2020)
    with pytest.raises(SettingsError, match="partitions_start is 2020"):
        build_definitions(Settings(partitions_start=other))


# ----------------------------------------------------------------------------------- import cycles


def _is_type_checking(test: ast.expr) -> bool:
    """``TYPE_CHECKING`` or ``typing.TYPE_CHECKING``: the guard of imports that never run."""
    if isinstance(test, ast.Name):
        return test.id == "TYPE_CHECKING"
    return isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"


def _run_time_imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement that can run, at any depth (functions, classes, ``try``), skipping the
    body (not the ``else``) of ``if TYPE_CHECKING:``."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            for child in node.orelse:
                yield from _run_time_imports(ast.Module(body=[child], type_ignores=[]))
        else:
            yield from _run_time_imports(node)


def module_name(path: Path, root: Path = ROOT) -> str:
    """Dotted name of a source file; a package's ``__init__.py`` is the package."""
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _resolve(name: str, modules: set[str]) -> str | None:
    """The project module ``name`` refers to: itself, or the longest known prefix (an attribute)."""
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def import_graph(root: Path = ROOT, packages: tuple[str, ...] = LAYERS) -> dict[str, dict[str, int]]:
    """module -> {imported project module: line of the first such import}.

    ``from pkg import name`` points at ``pkg.name`` when that is a module, else at ``pkg`` (the name
    is an attribute there). Importing a submodule also runs its packages' ``__init__``, but that is
    not counted as an edge: every package would otherwise be in a cycle with its own submodules."""
    paths = {module_name(p, root): p for pkg in packages for p in sorted((root / pkg).rglob("*.py"))}
    modules = set(paths)
    graph: dict[str, dict[str, int]] = {}
    for module, path in paths.items():
        is_package = path.name == "__init__.py"
        edges: dict[str, int] = {}
        for node in _run_time_imports(_parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            else:
                base = node.module or ""
                if node.level:
                    anchor = module.split(".")
                    anchor = anchor if is_package else anchor[:-1]
                    anchor = anchor[: len(anchor) - (node.level - 1)]
                    base = ".".join([*anchor, base] if base else anchor)
                for alias in node.names:
                    full = f"{base}.{alias.name}"
                    targets.append(full if full in modules else base)
            for target in targets:
                resolved = _resolve(target, modules)
                if resolved is not None and resolved != module:
                    edges.setdefault(resolved, node.lineno)
        graph[module] = edges
    return graph


def import_cycles(graph: dict[str, dict[str, int]]) -> list[list[str]]:
    """The strongly connected components with more than one module (Tarjan, iterative), each sorted;
    every module in one can reach every other through imports."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    components: list[list[str]] = []
    counter = 0
    for start in sorted(graph):
        if start in index:
            continue
        work: list[tuple[str, Iterator[str]]] = []
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on_stack.add(start)
        work.append((start, iter(sorted(graph[start]))))
        while work:
            node, children = work[-1]
            for child in children:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, {})))))
                    break
                if child in on_stack:
                    low[node] = min(low[node], index[child])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        components.append(sorted(component))
    return sorted(components)


def describe_cycle(component: list[str], graph: dict[str, dict[str, int]]) -> str:
    """The component's modules and each import that keeps it together (``a:line -> b``)."""
    members = set(component)
    links = [
        f"    {source}:{line} -> {target}"
        for source in component
        for target, line in sorted(graph[source].items())
        if target in members
    ]
    return " <-> ".join(component) + "\n" + "\n".join(links)


#: Import cycles accepted as they are, each with the reason. A component must match exactly: a module
#: joining one (or a new cycle anywhere) fails the test, and so does an entry once its cycle is gone.
ACCEPTED_CYCLES: dict[frozenset[str], str] = {
    # The DSL's fluent types return one another, as Kafka Streams' own API does: a KStream becomes a
    # KTable (to_table) and back (to_stream), groups into a KGroupedStream that aggregates into a
    # KTable, joins, windows and suppresses into further types, and each is built with the
    # StreamsBuilder's graph. The calls that close the cycle are imports inside methods (the types
    # are one module each); making it acyclic would mean one module of all of them or a factory
    # registry that only hides the same dependency.
    frozenset(
        {
            "edge.dsl.branched",
            "edge.dsl.builder",
            "edge.dsl.cogrouped",
            "edge.dsl.fk_join",
            "edge.dsl.grouped",
            "edge.dsl.kstream",
            "edge.dsl.ktable",
            "edge.dsl.stream_joined",
            "edge.dsl.suppressed",
            "edge.dsl.versioned",
            "edge.dsl.windowed",
        }
    ): "the DSL's types return one another",
}


def test_no_import_cycles() -> None:
    graph = import_graph()
    found = import_cycles(graph)
    new = [describe_cycle(c, graph) for c in found if frozenset(c) not in ACCEPTED_CYCLES]
    assert not new, "import cycles:\n" + "\n".join(new)
    gone = set(ACCEPTED_CYCLES) - {frozenset(c) for c in found}
    assert not gone, f"accepted cycles that no longer exist (remove them from ACCEPTED_CYCLES): {gone}"


def test_the_cycle_scan_sees_function_level_imports_but_not_type_checking(tmp_path: Path) -> None:
    """The checker itself: a cycle closed by an import inside a function (absolute or relative) is
    one; a cycle closed only under ``if TYPE_CHECKING:`` is not; ``from pkg import module`` points at
    the module, ``from pkg import name`` at the package."""
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from pkg.a import A\n")
    (pkg / "a.py").write_text("import pkg.b\nA = 1\n")
    (pkg / "b.py").write_text("def f():\n    from . import a\n")
    (pkg / "c.py").write_text("from pkg import d\n")
    (pkg / "d.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from pkg.c import x\n"
        "else:\n    import json\n"
    )
    (pkg / "e.py").write_text("from pkg import A\n")
    graph = import_graph(tmp_path, ("pkg",))
    assert graph["pkg.b"] == {"pkg.a": 2}
    assert graph["pkg.c"] == {"pkg.d": 1}
    assert graph["pkg.d"] == {}
    assert graph["pkg.e"] == {"pkg": 1}
    assert import_cycles(graph) == [["pkg.a", "pkg.b"]]
    assert "pkg.b:2 -> pkg.a" in describe_cycle(["pkg.a", "pkg.b"], graph)
