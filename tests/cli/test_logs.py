"""Log lines: quiet by default, text or JSON, with the run's context fields."""

from __future__ import annotations

import io
import json
import logging

import pytest

from bot.logs import configure_logging, one_line


@pytest.fixture
def restore_logging():
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    for name in ("alembic", "httpx", "httpx2", "httpcore2", "bot", "bot.slack", "aiohttp.access"):
        logging.getLogger(name).setLevel(logging.NOTSET)


def test_json_lines_carry_the_context(restore_logging):
    out = io.StringIO()
    configure_logging("INFO", "json", stream=out)
    logging.getLogger("bot.slack").info(
        "approved %s",
        "delete-record",
        extra={"run_id": "r1", "thread_id": "t1", "tool": "delete-record", "decision": "approved"},
    )
    logging.getLogger("alembic.runtime.migration").info("Running upgrade 0001 -> 0002")
    logging.getLogger("httpx").info('HTTP Request: POST http://model/v1/chat/completions "HTTP/1.1 200 OK"')
    [line] = out.getvalue().splitlines()
    entry = json.loads(line)
    assert entry["message"] == "approved delete-record" and entry["level"] == "INFO" and entry["logger"] == "bot.slack"
    assert (entry["run_id"], entry["thread_id"], entry["tool"], entry["decision"]) == (
        "r1",
        "t1",
        "delete-record",
        "approved",
    )


def test_text_lines_end_with_the_context_and_debug_shows_the_libraries(restore_logging):
    out = io.StringIO()
    configure_logging("debug", "text", stream=out)
    logging.getLogger("bot").info("turn done", extra={"run_id": "r1", "thread_id": "t1"})
    logging.getLogger("alembic.runtime.migration").info("Running upgrade")
    lines = out.getvalue().splitlines()
    assert lines[0].endswith("bot: turn done run_id=r1 thread_id=t1")
    assert "Running upgrade" in lines[1]


def test_an_expected_failure_is_one_line(restore_logging):
    out = io.StringIO()
    configure_logging("INFO", "text", stream=out)
    logger = logging.getLogger("test.reconnect")
    logger.addFilter(one_line)
    try:
        raise ConnectionError("network is unreachable")
    except ConnectionError:
        logger.exception("Failed to connect; Retrying...")
    [line] = out.getvalue().splitlines()
    assert line.endswith("Failed to connect; Retrying... (ConnectionError)")


def test_an_unknown_level_is_refused():
    with pytest.raises(ValueError, match="unknown log level"):
        configure_logging("LOUD")


@pytest.mark.parametrize("log_format", ["text", "json"])
async def test_a_model_request_through_the_openai_client_logs_nothing_at_info(restore_logging, model, log_format):
    """openai 3.x sends its requests through httpx2 (and httpcore2), whose INFO line per request was
    quieted only under httpx's old name: every model step logged "HTTP Request: POST ..."."""
    import openai

    from tests.support.scripted_model import reply

    out = io.StringIO()
    configure_logging("INFO", log_format, stream=out)
    model.chat.push(reply("hello"))
    client = openai.AsyncOpenAI(base_url=model.base_url, api_key="test", max_retries=0)
    try:
        answer = await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    finally:
        await client.close()
    assert answer.choices[0].message.content == "hello"
    assert out.getvalue() == ""
