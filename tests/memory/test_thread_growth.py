"""The benchmark of benchmarks/thread_growth.py, small enough for CI: the extraction request and the
bytes a turn stores do not grow with the thread (guarantee 5). SQLite and PostgreSQL."""

from __future__ import annotations

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "thread_growth.py"


def load_benchmark():
    spec = importlib.util.spec_from_file_location("thread_growth", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


async def test_extraction_prompt_and_stored_bytes_are_flat_as_the_thread_grows(model, database_url):
    bench = load_benchmark()
    short = await bench.measure(model, 5, database_url)
    long = await bench.measure(model, 60, database_url)

    assert long["thread_messages"] > 100
    assert long["extraction_bytes"] == short["extraction_bytes"]
    for key in ("stored_bytes_which_city_run", "stored_bytes_plain_turn"):
        assert abs(long[key] / short[key] - 1) <= 0.10, (key, short[key], long[key])
    # the replayed window is bounded too (Memory's default of 40 messages)
    assert long["chat_request_bytes"] < 4 * short["chat_request_bytes"]
