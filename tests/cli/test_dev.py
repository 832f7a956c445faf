"""`python -m bot dev` starts the playground with nothing configured: no Slack tokens, no model key."""

import os
import re
import signal
import subprocess
import sys
import urllib.request


def connections_to(port: int) -> int:
    """How many established TCP connections on this machine have the loopback `port` as their local end
    (the server's side of each open page), from the kernel's table (Linux)."""
    with open("/proc/net/tcp") as table:
        rows = [line.split() for line in table.readlines()[1:]]
    return sum(1 for row in rows if row[1] == f"0100007F:{port:04X}" and row[3] == "01")


def test_dev_serves_the_playground_with_nothing_configured(tmp_path, user_data_folder):
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
        with urllib.request.urlopen(url.group(1) + "/metrics", timeout=10) as metrics:
            assert "bot_approvals_waiting 0.0" in metrics.read().decode()  # as serve and socket offer it
        # the playground's own database, in the user's data folder (not in the folder dev runs in)
        database = user_data_folder / "approval-bot" / "playground.db"
        assert f"Database:   sqlite+aiosqlite:///{database}" in printed, printed
        assert database.exists() and not (tmp_path / "data").exists()
    finally:
        process.send_signal(signal.SIGINT)
        process.wait(timeout=20)


def test_ctrl_c_ends_the_playground_at_once_with_pages_open(tmp_path):
    """Open pages hold long polls of 20 s; Ctrl-C must not wait for them."""
    import json
    import threading
    import time

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
        printed = ""
        for line in process.stdout:
            printed += line
            if line.startswith("Stop with Ctrl-C"):
                break
        url = re.search(r"Playground: (http://127\.0\.0\.1:\d+)", printed).group(1)
        with urllib.request.urlopen(url + "/play/state?user=UALICE", timeout=10) as page:
            version = json.load(page)["version"]
        answered = []

        def open_page() -> None:
            with urllib.request.urlopen(f"{url}/play/state?user=UALICE&since={version}", timeout=30) as poll:
                answered.append(poll.status)

        pages = [threading.Thread(target=open_page) for _ in range(3)]
        for page in pages:
            page.start()
        port = int(url.rsplit(":", 1)[1])
        deadline = time.monotonic() + 30
        while connections_to(port) < 3:  # the three pages are connected, their polls waiting
            assert time.monotonic() < deadline and all(page.is_alive() for page in pages), answered
            time.sleep(0.02)

        stopped_at = time.monotonic()
        process.send_signal(signal.SIGINT)
        process.wait(timeout=15)
        took = time.monotonic() - stopped_at
        for page in pages:
            page.join(timeout=5)
    finally:
        process.kill()
    rest = process.stdout.read()
    assert process.returncode == 0 and "Traceback" not in rest, rest
    assert answered == [200, 200, 200]  # each open page got its answer, not a broken connection
    assert took < 5, f"Ctrl-C took {took:.1f} s with pages open"  # before: the 20 s of the polls
