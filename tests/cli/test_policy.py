"""`python -m bot policy list|set` and `python -m bot audit`, in real processes on DATABASE_URL."""

from __future__ import annotations

import asyncio
import csv
import io
import json
import os
import sys

from memory import AuditVia, Storage


async def bot(*args: str, database_url: str) -> tuple[int, str, str]:
    env = {**os.environ, "DATABASE_URL": database_url}
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bot", *args, env=env, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE
    )
    out, err = await process.communicate()
    return process.returncode, out.decode(), err.decode()


def table(out: str) -> dict[str, list[str]]:
    lines = out.strip().splitlines()
    return {line.split()[0]: line.split()[1:] for line in lines[1:]}


async def test_policy_set_patches_and_list_shows_every_tool(database_url):
    code, out, err = await bot("policy", "list", database_url=database_url)
    assert code == 0, err
    rows = table(out)
    assert set(rows) == {"delete-record", "get-weather", "issue-refund", "list-records"}
    assert rows["delete-record"] == ["always", "inherit", "anyone", "allowed", "never", "0"]
    assert rows["list-records"] == ["never", "inherit", "anyone", "allowed", "never", "0"]

    code, out, err = await bot(
        "policy", "set", "list-records", "--mode", "require_approval", "--approvers", "U1,S2",
        "--no-self-approval", "--expires", "300", database_url=database_url,
    )  # fmt: skip
    assert code == 0, err
    assert "version 1" in out
    code, out, err = await bot("policy", "set", "list-records", "--mode", "disabled", database_url=database_url)
    assert code == 0, err
    rows = table((await bot("policy", "list", database_url=database_url))[1])
    assert rows["list-records"] == ["never", "disabled", "U1,S2", "refused", "300s", "2"]

    code, out, err = await bot(
        "policy", "set", "list-records", "--approvers", "", "--expires", "0", "--self-approval",
        database_url=database_url,
    )  # fmt: skip
    assert code == 0, err
    rows = table((await bot("policy", "list", database_url=database_url))[1])
    assert rows["list-records"] == ["never", "disabled", "anyone", "allowed", "never", "3"]


async def test_bad_input_is_one_line_and_changes_nothing(database_url):
    assert (await bot("policy", "set", "delete-record", "--approvers", "U1", database_url=database_url))[0] == 0
    for args, expected in [
        (("policy", "set", "no-such-tool", "--mode", "disabled"), "unknown tool 'no-such-tool'"),
        (("policy", "set", "delete-record", "--approvers", "bob"), "not a Slack user or user-group ID: bob"),
        (("policy", "set", "delete-record", "--expires", "-1"), "negative"),
        (("policy", "set", "delete-record", "--expires", "soon"), "not a whole number of seconds"),
        # issue 17, item 4: a year at most (it was stored, and stopped the expiry sweep; a traceback on PostgreSQL)
        (("policy", "set", "delete-record", "--expires", "100000000000"), "an expiry is 1 second to 365 days"),
        (("policy", "set", "delete-record", "--expires", "31536001"), "more than 365 days"),
        (("policy", "set", "delete-record", "--mode", "maybe"), "invalid choice: 'maybe'"),
        (("audit", "--since", "last tuesday"), "not an ISO-8601 date or time"),
    ]:
        code, out, err = await bot(*args, database_url=database_url)
        assert code == 2, (args, out, err)
        assert expected in err.strip().splitlines()[-1], (args, err)
        assert "Traceback" not in err
    rows = table((await bot("policy", "list", database_url=database_url))[1])
    assert rows["delete-record"] == ["always", "inherit", "U1", "allowed", "never", "1"]


async def test_audit_prints_the_trail_as_table_jsonl_and_csv(database_url):
    storage = Storage(database_url)
    try:
        for action, tool, actor, via in [
            ("requested", "delete-record", "U1", AuditVia.RUNTIME),
            ("approved", "delete-record", "U2", AuditVia.BUTTON),
            ("requested", "issue-refund", "U1", AuditVia.RUNTIME),
        ]:
            await storage.audit_log.record(
                run_id="run1", tool_call_id="call1", tool_name=tool, action=action, actor=actor, via=via,
                args_fingerprint="ab" * 32, policy_version=0,
            )  # fmt: skip
    finally:
        await storage.close()

    code, out, err = await bot("audit", "--format", "jsonl", "--tool", "delete-record", database_url=database_url)
    assert code == 0, err
    lines = [json.loads(line) for line in out.splitlines()]
    assert [(x["action"], x["actor"], x["via"]) for x in lines] == [
        ("requested", "U1", "runtime"),
        ("approved", "U2", "button"),
    ]
    assert {"at", "run_id", "tool_call_id", "tool_name", "action", "actor", "via", "args_fingerprint",
            "policy_version"} <= set(lines[0])  # fmt: skip
    assert lines[0]["at"].endswith("Z") and lines[0]["policy_version"] == 0

    code, out, err = await bot("audit", "--format", "csv", "--since", "2000-01-01", database_url=database_url)
    assert code == 0, err
    assert [r["tool_name"] for r in csv.DictReader(io.StringIO(out))] == [
        "delete-record",
        "delete-record",
        "issue-refund",
    ]
    code, out, err = await bot("audit", "--since", "2999-01-01T00:00:00+00:00", database_url=database_url)
    assert code == 0 and len(out.strip().splitlines()) == 1  # the header alone
    code, out, err = await bot("audit", database_url=database_url)
    assert out.splitlines()[0].split()[:2] == ["AT", "ACTION"] and len(out.splitlines()) == 4
