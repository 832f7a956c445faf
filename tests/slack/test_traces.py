"""OpenTelemetry traces (the `otel` extra): what an operator's trace backend receives for one approval cycle
in Slack, read through the SDK's in-memory exporter; and nothing at all while tracing is off."""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("opentelemetry.sdk.trace", reason="the otel extra is not installed (pip install -e '.[test,otel]')")

from opentelemetry.sdk.trace import TracerProvider  # noqa: E402
from opentelemetry.sdk.trace.export import SimpleSpanProcessor  # noqa: E402
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter  # noqa: E402
from opentelemetry.trace import SpanKind, StatusCode  # noqa: E402

from bot import telemetry  # noqa: E402
from tests.support.scripted_model import call, failure, reply, tool_calls  # noqa: E402
from tests.support.waiting import until  # noqa: E402

from .harness import RunningBot, running_bot  # noqa: E402


@pytest.fixture
def spans():
    """Tracing on, into an in-memory exporter (each span is exported when it ends); off afterwards."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry.enable(provider)
    try:
        yield exporter
    finally:
        telemetry.disable()
        provider.shutdown()


def named(exporter: InMemorySpanExporter, name: str) -> list:
    return [span for span in exporter.get_finished_spans() if span.name == name]


def children(exporter: InMemorySpanExporter, parent) -> list:
    return [
        span
        for span in exporter.get_finished_spans()
        if span.parent is not None and span.parent.span_id == parent.context.span_id
    ]


async def test_one_approval_cycle_in_slack_is_traced(spans, bot: RunningBot, model):
    model.chat.push(
        tool_calls(call("delete-record", {"id": 2}, id="call_1"), usage={"prompt_tokens": 40, "completion_tokens": 7}),
        reply("Record 2 est supprimé. 记录已删除。", usage={"prompt_tokens": 60, "completion_tokens": 12}),
    )
    await bot.mention("delete record 2, s'il vous plaît")
    message = await bot.approval_message()
    assert (await bot.sender.click(message, "tool_approve", user="U2"))[0] == 200
    await bot.slack.wait_for("chat.stopStream")
    await bot.slack.settle()

    turns = named(spans, "invoke_agent demo-agent")
    assert len(turns) == 2, [span.name for span in spans.get_finished_spans()]
    asked, decided = sorted(turns, key=lambda span: span.start_time)
    assert asked.attributes["bot.run.finish_reason"] == "suspended"
    assert decided.attributes["bot.run.finish_reason"] == "stop"
    for turn in turns:
        assert turn.attributes["gen_ai.operation.name"] == "invoke_agent"
        assert turn.attributes["gen_ai.agent.id"] == "demo-agent"
        assert turn.attributes["gen_ai.conversation.id"].startswith("slack:")
        assert turn.attributes["bot.run.id"] == asked.attributes["bot.run.id"]  # one run, two turns

    # the first turn: one model call, which proposed the call, and the call's wait for a human
    first_calls = [span for span in children(spans, asked) if span.name == "chat test-model"]
    assert len(first_calls) == 1
    chat = first_calls[0]
    assert chat.kind == SpanKind.CLIENT
    assert chat.attributes["gen_ai.request.model"] == "test-model"
    assert chat.attributes["gen_ai.usage.input_tokens"] == 40
    assert chat.attributes["gen_ai.usage.output_tokens"] == 7
    assert tuple(chat.attributes["gen_ai.response.finish_reasons"]) == ("tool_calls",)
    waits = [span for span in children(spans, asked) if span.name == "execute_tool delete-record"]
    assert len(waits) == 1
    wait = waits[0]
    assert wait.attributes["gen_ai.tool.call.id"] == "call_1"
    assert wait.attributes["bot.tool_call.requires_approval"] is True
    assert wait.attributes["bot.policy.mode"] == "inherit"
    assert [event.name for event in wait.events] == ["bot.approval.requested"]

    # the second turn: the decision (who, through what), the tool's run, the model's answer
    decisions = [event for event in decided.events if event.name == "bot.approval.decided"]
    assert len(decisions) == 1
    assert decisions[0].attributes["bot.approval.decision"] == "approved"
    assert decisions[0].attributes["bot.approval.decided_by"] == "U2"
    assert decisions[0].attributes["bot.approval.via"] == "button"
    runs = [span for span in children(spans, decided) if span.name == "execute_tool delete-record"]
    assert len(runs) == 1
    assert runs[0].attributes["bot.approval.decided_by"] == "U2"
    assert runs[0].status.status_code != StatusCode.ERROR
    answers = [span for span in children(spans, decided) if span.name == "chat test-model"]
    assert len(answers) == 1
    assert tuple(answers[0].attributes["gen_ai.response.finish_reasons"]) == ("stop",)
    assert answers[0].attributes["gen_ai.usage.output_tokens"] == 12
    assert decided.attributes["gen_ai.usage.output_tokens"] == 12


async def test_a_failing_model_call_is_an_error_span(spans, bot: RunningBot, model):
    model.chat.push(failure(400, message="the model is unavailable"))
    await bot.mention("hello, ¿estás ahí?")
    turns = await until(lambda: named(spans, "invoke_agent demo-agent"), every=0.01, what="the turns' spans")
    await bot.slack.settle()
    (turn,) = turns
    assert turn.status.status_code == StatusCode.ERROR
    assert turn.attributes["bot.run.finish_reason"] == "error"
    (chat,) = [span for span in children(spans, turn) if span.name == "chat test-model"]
    assert chat.status.status_code == StatusCode.ERROR
    assert chat.attributes["error.type"] == "BadRequestError"


async def test_nothing_is_traced_while_tracing_is_off(bot: RunningBot, model):
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry.enable(provider)
    telemetry.disable()  # as when OTEL_EXPORTER_OTLP_ENDPOINT is unset: the hooks never reach a tracer
    model.chat.push(reply("Bonjour ! 안녕하세요"))
    await bot.mention("hello")
    await bot.slack.wait_for("chat.stopStream")
    await bot.slack.settle()
    assert telemetry.model_call("test-model") is telemetry.OFF
    assert exporter.get_finished_spans() == ()
    provider.shutdown()


async def test_with_an_endpoint_the_spans_go_out_over_otlp(database_url, slack, model):
    """`setup` as `serve` calls it with OTEL_EXPORTER_OTLP_ENDPOINT: a collector on loopback receives the turn."""
    from aiohttp import web
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

    received: list[ExportTraceServiceRequest] = []

    async def collect(request: web.Request) -> web.Response:
        assert request.content_type == "application/x-protobuf"
        export = ExportTraceServiceRequest()
        export.ParseFromString(await request.read())
        received.append(export)
        return web.Response(body=b"", content_type="application/x-protobuf")

    collector = web.Application()
    collector.router.add_post("/v1/traces", collect)
    runner = web.AppRunner(collector)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    provider = telemetry.setup(f"http://127.0.0.1:{port}", service_name="approval-bot-test")
    try:
        async with running_bot(database_url=database_url, slack=slack) as bot:
            model.chat.push(reply("こんにちは"))
            await bot.mention("hello")
            await bot.slack.wait_for("chat.stopStream")
            await bot.slack.settle()
        await asyncio.to_thread(telemetry.shutdown, provider)  # the exporter's thread posts what is buffered
    finally:
        telemetry.disable()
        await runner.cleanup()
    spans = [
        (resource.resource, span)
        for export in received
        for resource in export.resource_spans
        for scope in resource.scope_spans
        for span in scope.spans
    ]
    names = [span.name for _, span in spans]
    assert "invoke_agent demo-agent" in names and "chat test-model" in names
    services = {
        attr.value.string_value for resource, _ in spans for attr in resource.attributes if attr.key == "service.name"
    }
    assert services == {"approval-bot-test"}


def test_without_an_endpoint_tracing_stays_off():
    assert telemetry.setup(None) is None
    assert telemetry.turn("run") is telemetry.OFF
