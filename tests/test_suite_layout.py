"""The test suite's own layout, read with `ast`: fixtures live in `conftest.py` files, helpers in
`tests/support/` or a directory's helper module, and no file of the suite imports a test module
(`test_*.py`) or a `conftest.py`. Importing one runs its tests' module a second time under another name,
can shadow a fixture silently, and ties two test files together for whoever deletes or moves one."""

from __future__ import annotations

import ast
from pathlib import Path

TESTS = Path(__file__).resolve().parent


def _is_test_module(dotted: str) -> bool:
    last = dotted.rsplit(".", 1)[-1]
    return last.startswith("test_") or last == "conftest"


def imports_of_test_modules(tests: Path = TESTS) -> list[tuple[str, str]]:
    """(file, imported module) for each import, in any file under `tests`, of a test module or conftest."""
    found = []
    for path in sorted(tests.rglob("*.py")):
        relative = path.relative_to(tests.parent)
        package = list(relative.parent.parts)
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = package[: len(package) - node.level + 1] if node.level else []
                module = ".".join([*base, *([node.module] if node.module else [])])
                targets = [module, *(f"{module}.{alias.name}" for alias in node.names)]
            found += [(str(relative), target) for target in targets if _is_test_module(target)]
    return found


def test_no_file_of_the_suite_imports_a_test_module():
    assert imports_of_test_modules() == []


def test_the_check_finds_an_import_of_a_test_module(tmp_path):
    """The check itself can fail: each way of importing a test module is found, a helper module is not."""
    tests = tmp_path / "tests"
    (tests / "slack" / "listeners").mkdir(parents=True)
    (tests / "slack" / "harness.py").write_text("from tests.support.slack import SignedSender\n")
    (tests / "slack" / "listeners" / "test_a.py").write_text("from ..harness import running_bot\n")
    (tests / "slack" / "test_b.py").write_text("from .listeners.test_a import record_ids\n")
    (tests / "slack" / "test_c.py").write_text("def f():\n    from tests.slack import test_b\n")
    (tests / "slack" / "test_d.py").write_text("import tests.slack.conftest\n")
    assert sorted(imports_of_test_modules(tests)) == [
        ("tests/slack/test_b.py", "tests.slack.listeners.test_a"),
        ("tests/slack/test_c.py", "tests.slack.test_b"),
        ("tests/slack/test_d.py", "tests.slack.conftest"),
    ]
