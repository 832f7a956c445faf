"""MCP servers as tool sources, without Slack: the servers file, both transports, the tools as the agent
gets them, and servers that fail (one that will not start, one that crashes or hangs mid-call)."""

from __future__ import annotations

import asyncio

import mcp.types as types
import pytest

from bot.mcp import McpConfigError, McpServerError, McpToolError, load_mcp_config
from bot.mcp._tools import result_of
from tests.support.waiting import until

from .servers import configs, connected, context, http_server, stdio_entry, write_config


async def test_stdio_tools_have_the_servers_names_schemas_titles_and_approval_defaults(tmp_path):
    async with connected(configs(tmp_path, {"tickets": stdio_entry(trust="read-only-hints")})) as servers:
        tools = {t.id: t for t in servers.tools}
    assert {"tickets__list_tickets", "tickets__close_ticket", "tickets__open_ticket"} <= set(tools)
    close = tools["tickets__close_ticket"]
    assert close.title == "Close ticket" and close.source == "MCP server `tickets`"
    assert close.hints == ("destructive", "idempotent", "closed world")
    assert close.parameters()["required"] == ["id"] and close.description.startswith("Close a ticket")
    assert close.require_approval is True  # destructive: asks
    assert tools["tickets__open_ticket"].require_approval is True  # writes: asks
    assert tools["tickets__list_tickets"].require_approval is False  # read-only, on a trusted server


async def test_read_only_hints_of_a_server_not_trusted_still_ask(tmp_path):
    async with connected(configs(tmp_path, {"tickets": stdio_entry()})) as servers:
        tools = {t.id: t for t in servers.tools}
    assert tools["tickets__list_tickets"].require_approval is True
    assert tools["tickets__list_tickets"].hints == ("read-only", "closed world")


async def test_streamable_http_server_lists_and_calls(tmp_path):
    async with http_server() as url, connected(configs(tmp_path, {"remote": {"url": url}})) as servers:
        tools = {t.id: t for t in servers.tools}
        tickets = await tools["remote__list_tickets"].execute({}, context())
    assert [t["title"] for t in tickets][1] == "登录页面加载缓慢 (same, reported in Chinese)"
    assert "Café" in tickets[2]["title"]


async def test_a_server_that_will_not_start_is_named_and_the_others_run(tmp_path, caplog):
    servers_file = {"broken": {"command": str(tmp_path / "no-such-server")}, "tickets": stdio_entry()}
    async with connected(configs(tmp_path, servers_file)) as servers:
        assert "broken" in servers.unavailable and "no-such-server" in servers.unavailable["broken"]
        assert all(t.id.startswith("tickets__") for t in servers.tools) and servers.tools
    lines = [r.getMessage() for r in caplog.records if "'broken'" in r.getMessage()]
    assert len(lines) == 1 and "runs without its tools" in lines[0]


async def test_a_crash_mid_call_is_a_tool_error_and_the_server_is_restarted(tmp_path):
    async with connected(configs(tmp_path, {"tickets": stdio_entry(trust="read-only-hints")})) as servers:
        tools = {t.id: t for t in servers.tools}
        with pytest.raises(McpServerError, match="stopped during 'crash'"):
            await tools["tickets__crash"].execute({}, context())
        assert len(await tools["tickets__list_tickets"].execute({}, context())) == 3  # a new process answers


async def test_a_hang_past_the_call_timeout_is_a_tool_error_and_the_server_is_restarted(tmp_path):
    async with connected(configs(tmp_path, {"tickets": stdio_entry(timeout=1)})) as servers:
        tools = {t.id: t for t in servers.tools}
        with pytest.raises(McpServerError, match="did not answer 'hang' within 1s"):
            await tools["tickets__hang"].execute({}, context())
        assert len(await tools["tickets__list_tickets"].execute({}, context())) == 3


async def test_an_http_server_that_went_away_is_a_tool_error_and_reconnected_once_it_is_back(tmp_path):
    async with http_server() as url:
        async with connected(configs(tmp_path, {"remote": {"url": url}})) as servers:
            tools = {t.id: t for t in servers.tools}
            with pytest.raises(McpServerError, match="'remote'"):
                await tools["remote__crash"].execute({}, context())
            with pytest.raises(McpServerError, match="'remote' did not start"):
                await tools["remote__list_tickets"].execute({}, context())  # nobody listens: a tool error again
            port = int(url.rsplit(":", 1)[1].split("/")[0])
            async with http_server(port):
                assert len(await tools["remote__list_tickets"].execute({}, context())) == 3


async def test_an_error_the_server_answers_is_a_tool_error_with_its_message(tmp_path):
    async with connected(configs(tmp_path, {"tickets": stdio_entry()})) as servers:
        tools = {t.id: t for t in servers.tools}
        with pytest.raises(McpToolError, match="there is no ticket 99"):
            await tools["tickets__close_ticket"].execute({"id": 99}, context())


def test_variables_are_expanded_in_env_and_headers_and_a_missing_one_is_named_not_shown(tmp_path):
    servers = {
        "remote": {"url": "https://tickets.example/mcp", "headers": {"Authorization": "Bearer ${TICKETS_TOKEN}"}},
        "local": {"command": "srv", "env": {"DB": "${DB_URL}"}},
    }
    loaded = configs(tmp_path, servers, {"TICKETS_TOKEN": "s3cr3t", "DB_URL": "postgres://x"})
    assert loaded[0].headers == {"Authorization": "Bearer s3cr3t"} and loaded[1].env == {"DB": "postgres://x"}
    assert "s3cr3t" not in repr(loaded)
    with pytest.raises(McpConfigError, match=r"\$\{TICKETS_TOKEN\}, which is not set"):
        configs(tmp_path, servers, {"DB_URL": "x"})


@pytest.mark.parametrize(
    ("servers", "complaint"),
    [
        ({"Tickets": {"command": "x"}}, "must be 1 to 32 characters"),
        ({"t": {"command": "x", "url": "http://h/mcp"}}, "exactly one of"),
        ({"t": {"url": "ftp://h"}}, "http:// or https://"),
        ({"t": {"command": "x", "trust": "everything"}}, '"trust" may only be'),
        ({"t": {"command": "x", "timeout": 0}}, "positive number"),
        ({"t": {"command": "x", "maxSessions": 0}}, "whole number"),
    ],
)
def test_a_bad_servers_file_is_one_line_naming_the_server(tmp_path, servers, complaint):
    with pytest.raises(McpConfigError, match=complaint) as caught:
        configs(tmp_path, servers)
    assert "\n" not in str(caught.value)


def test_a_file_that_is_not_json_is_named(tmp_path):
    path = write_config(tmp_path / "s.json", {})
    path.write_text("{not json", encoding="utf-8")
    with pytest.raises(McpConfigError, match="is not valid JSON"):
        load_mcp_config(path, {})


async def test_each_call_holds_a_session_of_its_own_within_max_sessions_and_idle_ones_are_closed(tmp_path):
    """Three calls at once, each asked "Which city?" and answering its own: each gets its own answer; with
    `maxSessions` 2 the third waits for a session, and sessions left idle are closed, all but one."""
    entry = stdio_entry(maxSessions=2, idleTimeout=0.5)
    async with connected(configs(tmp_path, {"tickets": entry})) as servers:
        connection = servers.connections["tickets"]
        most = 0

        async def trip(name: str, city: str) -> str:
            async def ask(params: types.ElicitRequestParams) -> types.ElicitResult:
                nonlocal most
                most = max(most, connection.sessions)
                assert f"({name})" in params.message
                await asyncio.sleep(0.3)
                return types.ElicitResult(action="accept", content={"city": city})

            result = await connection.call("ask_city", {"trip": name}, on_elicit=ask)
            return result_of(result)

        cities = {"trip 0": "廣州", "trip 1": "부산", "trip 2": "札幌"}
        results = await asyncio.gather(*(trip(name, city) for name, city in cities.items()))
        assert results == [f"{name}: {city}" for name, city in cities.items()]
        assert most == 2
        await until(lambda: connection.sessions == 1, what="the idle session to be closed")
