"""The size of the project's modules and classes, read from its source with `ast` (see CONTRIBUTING.md): no
file in `bot/`, `memory/` or `tools/` over 700 lines, no class over 400. A file or class that grows past the
limit is a job that wants a module or a class of its own."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("bot", "memory", "tools")
FILE_LIMIT = 700
CLASS_LIMIT = 400

STILL_TOO_LONG: set[str] = set()
"""What is over its limit and is being split (a file's path, or `path:Class`): none now; the list only shrinks."""


def too_long(root: Path = ROOT) -> dict[str, int]:
    """Each file over `FILE_LIMIT` lines and each class (at any depth) over `CLASS_LIMIT` -> its length."""
    found: dict[str, int] = {}
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            name = path.relative_to(root).as_posix()
            text = path.read_text()
            if (lines := len(text.splitlines())) > FILE_LIMIT:
                found[name] = lines
            for node in ast.walk(ast.parse(text, name)):
                if isinstance(node, ast.ClassDef):
                    start = min([node.lineno, *(d.lineno for d in node.decorator_list)])
                    if (lines := (node.end_lineno or node.lineno) - start + 1) > CLASS_LIMIT:
                        found[f"{name}:{node.name}"] = lines
    return found


def test_no_file_or_class_over_its_limit():
    over = too_long()
    new = {name: lines for name, lines in over.items() if name not in STILL_TOO_LONG}
    assert not new, f"over {FILE_LIMIT} lines a file or {CLASS_LIMIT} a class: {new}"
    split = STILL_TOO_LONG - set(over)
    assert not split, f"no longer over the limit, take off STILL_TOO_LONG: {sorted(split)}"


def test_the_size_check_finds_a_long_class_and_file(tmp_path):
    body = "\n".join(f"    x{i} = {i}" for i in range(CLASS_LIMIT))
    (tmp_path / "bot").mkdir()
    (tmp_path / "bot" / "big.py").write_text(f"class Big:\n{body}\n" + "\n" * (FILE_LIMIT - CLASS_LIMIT))
    assert too_long(tmp_path) == {"bot/big.py": FILE_LIMIT + 1, "bot/big.py:Big": CLASS_LIMIT + 1}
