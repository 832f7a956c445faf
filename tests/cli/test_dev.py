"""`python -m bot dev` starts the playground with nothing configured: no Slack tokens, no model key."""

import os
import re
import signal
import subprocess
import sys
import urllib.request


def test_dev_serves_the_playground_with_nothing_configured(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLACK_", "OPENAI_", "DATABASE_URL", "BOT_"))}
    process = subprocess.Popen(
        [sys.executable, "-m", "bot", "dev", "--port", "0"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        lines = []
        for line in process.stdout:
            lines.append(line)
            if line.startswith("Stop with Ctrl-C"):
                break
        printed = "".join(lines)
        url = re.search(r"Playground: (http://127\.0\.0\.1:\d+)", printed)
        assert url, printed
        assert "offline demo model" in printed
        with urllib.request.urlopen(url.group(1) + "/", timeout=10) as page:
            assert page.status == 200
            assert "Playground" in page.read().decode()
        assert (tmp_path / "data" / "playground.db").exists()
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=20)
