"""The layering of the project, read from its source with `ast` (see ARCHITECTURE.md).

Every import counts, also one under `if TYPE_CHECKING:` or inside a function: a cycle that only the
type checker sees still stands for two modules that cannot be understood (or changed) apart.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("bot", "memory", "tools")
RUNTIME = ("bot.agent", "memory", "tools")
ADAPTERS = ("bot.slack", "bot.api", "bot.playground")
RUNTIME_ROWS = {"RunRow", "ToolCallRow", "MessageRow", "ThreadRow"}
"""The ORM rows of the runtime's tables."""
RUNTIME_RECORDS = {"StoredRun", "StoredToolCall"}
"""What storage gives the runtime of those rows."""


def _modules(root: Path = ROOT) -> dict[str, tuple[Path, bool]]:
    """Dotted module name -> (its file, whether it is a package's __init__)."""
    found = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            parts = list(path.relative_to(root).with_suffix("").parts)
            is_package = parts[-1] == "__init__"
            found[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return found


def _imports(name: str, path: Path, is_package: bool, known: set[str]) -> dict[str, list[str]]:
    """The project's modules `name` imports -> the names it takes from each (empty for `import x`)."""
    package = name.split(".") if is_package else name.split(".")[:-1]
    found: dict[str, list[str]] = {}
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] in PACKAGES or alias.name in known:
                    found.setdefault(alias.name, [])
        elif isinstance(node, ast.ImportFrom):
            base = package[: len(package) - node.level + 1] if node.level else []
            target = ".".join([*base, *([node.module] if node.module else [])])
            if target.split(".")[0] not in PACKAGES:
                continue
            for alias in node.names:
                module = f"{target}.{alias.name}" if f"{target}.{alias.name}" in known else target
                found.setdefault(module, []).append(alias.name)
    found.pop(name, None)
    return found


def import_graph(root: Path = ROOT) -> dict[str, dict[str, list[str]]]:
    modules = _modules(root)
    return {name: _imports(name, path, is_package, set(modules)) for name, (path, is_package) in modules.items()}


def import_cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    cycles: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in graph.get(module, ()):
            if imported not in graph:
                continue
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            component = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == module:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return cycles


def _in(module: str, packages: tuple[str, ...]) -> bool:
    return any(module == p or module.startswith(p + ".") for p in packages)


def test_no_import_cycle_among_the_projects_modules():
    graph = {name: set(imported) for name, imported in import_graph().items()}
    assert import_cycles(graph) == []


def test_the_cycle_check_finds_a_cycle(tmp_path):
    """The check itself can fail: two modules of a package that import each other are found."""
    package = tmp_path / "tools"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / "_a.py").write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from ._b import B\n")
    (package / "_b.py").write_text("def f():\n    from tools import _a\n")
    for other in ("bot", "memory"):
        (tmp_path / other).mkdir()
    graph = {name: set(imported) for name, imported in import_graph(tmp_path).items()}
    assert import_cycles(graph) == [["tools._a", "tools._b"]]


def test_the_runtime_imports_no_slack_and_no_adapter():
    offending = []
    for module, (path, _) in _modules().items():
        if not _in(module, RUNTIME):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and not node.level:
                names = [node.module or ""]
            offending += [
                (module, n) for n in names if n.split(".")[0] in ("slack_bolt", "slack_sdk") or _in(n, ADAPTERS)
            ]
    assert offending == []


@pytest.mark.parametrize("adapter", ADAPTERS)
def test_an_adapter_reads_the_runtimes_records_not_its_rows(adapter):
    """Slack, the HTTP API and the playground get frozen records from `bot.agent`, never the runtime's
    database rows or its run store."""
    graph = import_graph()
    rows = [
        (module, name)
        for module, imported in graph.items()
        if _in(module, (adapter,))
        for source, names in imported.items()
        if _in(source, ("memory",))
        for name in names
        if name in RUNTIME_ROWS | RUNTIME_RECORDS
    ]
    assert rows == []
    reaching = [m for m, (path, _) in _modules().items() if _in(m, (adapter,)) and ".storage.runs" in path.read_text()]
    assert reaching == []


def test_the_runtime_works_with_storages_records_not_its_orm_rows():
    """`bot.agent` gets and gives `memory.StoredRun` / `StoredToolCall` (plain data) through `RunStorage`;
    the ORM rows of `memory.tables` stay inside `memory`, where the statements are built."""
    graph = import_graph()
    rows = [
        (module, name)
        for module, imported in graph.items()
        if _in(module, ("bot.agent",))
        for source, names in imported.items()
        if _in(source, ("memory",))
        for name in names
        if name in RUNTIME_ROWS
    ]
    assert rows == []


def _package_of_private(module: str) -> str | None:
    """The package whose private module `module` is (`memory` for `memory._runs`), or None if it is public."""
    parts = module.split(".")
    for index, part in enumerate(parts):
        if part.startswith("_") and not part.startswith("__"):
            return ".".join(parts[:index])
    return None


def private_imports(graph: dict[str, dict[str, list[str]]]) -> list[tuple[str, str]]:
    """(importer, private module) for each import of a package's private module from outside that package."""
    found = []
    for module, imported in sorted(graph.items()):
        for source in sorted(imported):
            owner = _package_of_private(source)
            if owner is not None and not _in(module, (owner,)):
                found.append((module, source))
    return found


def test_no_import_of_another_packages_private_module():
    """A module whose name starts with `_` is its package's own: others import what the package's
    `__init__` (or a public module) exports, so the insides can move without breaking them."""
    assert private_imports(import_graph()) == []


def test_the_private_import_check_finds_one(tmp_path):
    """The check itself can fail: `bot.agent` importing `memory._runs` is found; `memory` importing its
    own `_runs`, and a subpackage importing its parent's private module, are not."""
    for package in PACKAGES:
        (tmp_path / package).mkdir()
        (tmp_path / package / "__init__.py").write_text("")
    (tmp_path / "memory" / "_runs.py").write_text("class RunStore: ...\n")
    (tmp_path / "memory" / "__init__.py").write_text("from ._runs import RunStore\n")
    (tmp_path / "memory" / "sub").mkdir()
    (tmp_path / "memory" / "sub" / "__init__.py").write_text("from .._runs import RunStore\n")
    (tmp_path / "bot" / "agent.py").write_text("from memory._runs import RunStore\nfrom memory import RunStore\n")
    (tmp_path / "tools" / "x.py").write_text("def f():\n    from memory import _runs\n")
    assert private_imports(import_graph(tmp_path)) == [("bot.agent", "memory._runs"), ("tools.x", "memory._runs")]
