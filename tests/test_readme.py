"""The README's Python quick start runs as written, against the scripted model."""

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.support.scripted_model import call, reply, tool_calls

ROOT = Path(__file__).resolve().parents[1]


def quick_start() -> str:
    readme = (ROOT / "README.md").read_text()
    match = re.search(r"<!-- quick-start:.*?-->\s*```python\n(.*?)```", readme, re.DOTALL)
    assert match, "the README has no quick-start block"
    return match.group(1)


def test_quick_start_runs_as_written(model, tmp_path):
    model.chat.push(tool_calls(call("delete-record", {"id": "42"}, id="call_1")), reply("Record 42 is deleted."))
    script = tmp_path / "quickstart.py"
    script.write_text(quick_start())
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    assert "waiting for approval: delete-record {'id': '42'}" in done.stdout
    assert "Record 42 is deleted." in done.stdout
    assert model.unexpected == []
