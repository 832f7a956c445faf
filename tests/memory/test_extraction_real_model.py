"""A dozen cases of the extraction benchmark (benchmarks/extraction_cases.py) against a real local model.

The model is the server at `BOT_TEST_LLM_URL` (any OpenAI-compatible `.../v1`), else the `llama-server`
and SmolLM2-135M-Instruct that `bash benchmarks/setup_local_model.sh` put in benchmarks/.llm/ (started
here on a free port). Without either the test is skipped, saying so. The hard rules hold on any model:
no refusal read as a yes, no unrelated message resumes a tool; and most of the cases are read right.
"""

from __future__ import annotations

import importlib.util
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
LLM_DIR = BENCHMARKS / ".llm"
SERVER = LLM_DIR / "bin" / "llama-server"
MODEL_FILE = LLM_DIR / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"

pytestmark = pytest.mark.real_model


def load_benchmark():
    spec = importlib.util.spec_from_file_location("extraction_quality", BENCHMARKS / "extraction_quality.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


@pytest.fixture(scope="module")
def llm_url():
    given = os.environ.get("BOT_TEST_LLM_URL")
    if given:
        if not answers(given.rstrip("/") + "/models"):
            pytest.skip(f"BOT_TEST_LLM_URL={given} does not answer GET /models")
        yield given
        return
    if not (SERVER.exists() and MODEL_FILE.exists()):
        pytest.skip(
            "no local model server: set BOT_TEST_LLM_URL to an OpenAI-compatible /v1 URL, "
            "or run `bash benchmarks/setup_local_model.sh` to build llama-server and fetch SmolLM2-135M"
        )
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    process = subprocess.Popen(
        [
            str(SERVER),
            "-m",
            str(MODEL_FILE),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "-c",
            "2048",
            "-t",
            "1",
            "--no-cache-prompt",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 120
        while not answers(f"http://127.0.0.1:{port}/health"):
            if process.poll() is not None or time.monotonic() > deadline:
                pytest.fail(f"llama-server did not come up on port {port} (exit code {process.poll()})")
            time.sleep(0.5)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        process.terminate()
        process.wait(timeout=10)


async def test_a_dozen_cases_against_a_real_model(llm_url):
    bench = load_benchmark()
    cases = [case for case in bench.CASES if case.id in bench.SMOKE]
    assert len(cases) == 12
    agent = bench.model_agent(llm_url, os.environ.get("BOT_TEST_LLM_MODEL", "openai/local"))

    outcomes = await bench.run(agent, cases, timeout=120)

    report = bench.confusions(outcomes)
    assert bench.hard_rules(outcomes) == {"unsafe refusals": 0, "unrelated resumes": 0}, report
    assert [o.case.id for o in outcomes if o.verdict == "unsafe"] == [], report
    assert sum(o.verdict == "right" for o in outcomes) >= 9, report
