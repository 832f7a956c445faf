"""Policies as code: `python -m bot policy export`, `policy apply FILE --plan` and `policy apply FILE` round-trip
a YAML file; a file with any problem is refused whole (one line per problem: file, line, what) and changes
nothing. (`BOT_POLICIES_FILE` at start: tests/cli/test_startup_errors.py.)"""

from __future__ import annotations

from pathlib import Path

import yaml

from memory import Storage
from tests.support.processes import bot_command

RULES = """    rules:
    - condition: args.order_id.startsWith("株式会社テスト")
      effect: refuse
      name: 取引停止
    - condition: args.amount > 100.0
      effect: require_approval
      name: finance
      approvers: [U9]
"""


async def audit_of(database_url: str) -> list:
    storage = Storage(database_url)
    try:
        return [e for e in await storage.audit_log.entries() if e.action == "policy_changed"]
    finally:
        await storage.close()


async def test_export_plan_apply_round_trip(database_url, tmp_path: Path):
    code, exported, err = await bot_command("policy", "export", database_url=database_url)
    assert code == 0, err
    assert "issue-refund:\n    mode: inherit" in exported and "    rules: []" in exported
    file = tmp_path / "policies.yaml"
    file.write_text(exported, encoding="utf-8")
    code, out, err = await bot_command("policy", "apply", str(file), "--plan", database_url=database_url)
    assert (code, out.strip()) == (0, "No changes: the database already holds what the file says."), err

    wanted = exported.replace("issue-refund:\n    mode: inherit", "issue-refund:\n    mode: require_approval", 1)
    head, tail = wanted.split("issue-refund:", 1)
    wanted = head + "issue-refund:" + tail.replace("    rules: []\n", RULES, 1)
    file.write_text(wanted, encoding="utf-8")
    code, out, err = await bot_command("policy", "apply", str(file), "--plan", database_url=database_url)
    assert code == 0, err
    assert out.splitlines() == [
        "issue-refund: mode: inherit -> require_approval",
        "issue-refund: rule 1 added: if args.order_id.startsWith(\"株式会社テスト\") then refuse (named '取引停止')",
        "issue-refund: rule 2 added: if args.amount > 100.0 then require_approval by U9 (named 'finance')",
    ]
    assert await audit_of(database_url) == []  # a plan changes nothing

    code, out, err = await bot_command("policy", "apply", str(file), database_url=database_url)
    assert code == 0, err
    assert out.splitlines()[-1] == f"Applied 1 tool policy from {file}."
    code, exported_again, _ = await bot_command("policy", "export", database_url=database_url)
    assert yaml.safe_load(exported_again) == yaml.safe_load(wanted)  # what was applied is what is exported
    (tmp_path / "again.yaml").write_text(exported_again, encoding="utf-8")
    code, out, _ = await bot_command(
        "policy", "apply", str(tmp_path / "again.yaml"), "--plan", database_url=database_url
    )
    assert out.strip() == "No changes: the database already holds what the file says."

    # the rules removed again: the plan says so, per rule
    file.write_text(exported, encoding="utf-8")
    code, out, err = await bot_command("policy", "apply", str(file), database_url=database_url)
    assert code == 0, err
    assert "issue-refund: rule 2 removed: if args.amount > 100.0" in out and "rule 1 removed" in out

    changes = await audit_of(database_url)
    assert [(e.tool_name, e.via, e.policy_version) for e in changes] == [
        ("issue-refund", "file", 1),
        ("issue-refund", "file", 2),
    ]
    assert str(file) in changes[0].detail
    assert (changes[0].before["rules"], len(changes[0].after["rules"]), changes[1].after["rules"]) == ([], 2, [])


async def test_a_bad_file_is_refused_whole_with_one_line_per_problem(database_url, tmp_path: Path):
    file = tmp_path / "policies.yaml"
    file.write_text(
        "policies:\n"
        "  get-weather:\n"
        "    mode: require_approval\n"  # fine on its own: still not applied
        "  issue-refund:\n"
        "    expires_after: soon\n"
        "    rules:\n"
        "    - condition: args.amont > 100.0\n"
        "      effect: require_approval\n"
        "    - condition: args.amount > 1.0\n"
        "      effect: maybe\n"
        "  no-such-tool:\n"
        "    mode: inherit\n",
        encoding="utf-8",
    )
    for plan in ((), ("--plan",)):
        code, out, err = await bot_command("policy", "apply", str(file), *plan, database_url=database_url)
        assert code == 2 and out == "", err
        problems = [line for line in err.splitlines() if line.startswith("error: ")]
        assert problems == [
            f"error: {file}:5: issue-refund: expires_after: 'soon' is not a whole number of seconds: an expiry is 1 "
            "second to 365 days (31536000 seconds), or 0 for none",
            f"error: {file}:7: issue-refund: rule 1: args has no field 'amont' (its fields: amount, order_id, reason)",
            f"error: {file}:9: issue-refund: rule 2: unknown effect 'maybe': use one of allow, require_approval, refuse",
            f"error: {file}:11: unknown tool 'no-such-tool'; the agent's tools are: delete-record, get-weather, "
            "issue-refund, list-records",
        ], err
    file.write_text("policies:\n  get-weather: [\n", encoding="utf-8")
    code, _, err = await bot_command("policy", "apply", str(file), database_url=database_url)
    assert code == 2 and f"error: {file}:3: not valid YAML" in err, err
    assert await audit_of(database_url) == []  # nothing at all was written


async def test_the_demo_policies_file_applies_to_the_demo_agent(database_url):
    demo = Path(__file__).resolve().parents[2] / "examples" / "demo-policies.yaml"
    code, out, err = await bot_command("policy", "apply", str(demo), database_url=database_url)
    assert code == 0, err
    assert out.splitlines() == [
        "issue-refund: rule 1 added: if args.amount > 100.0 then require_approval by UBOB (named 'finance')",
        "issue-refund: rule 2 added: if args.order_id.startsWith(\"TEST-\") then refuse (named 'test orders')",
        "delete-record: rule 1 added: if args.id <= 2 then refuse (named 'keep the first records') [trial]",
        f"Applied 2 tool policies from {demo}.",
    ]


async def test_the_undo_window_round_trips_through_a_policies_file_and_the_command_line(database_url, tmp_path: Path):
    code, exported, err = await bot_command("policy", "export", database_url=database_url)
    assert code == 0, err
    assert "    undo_seconds: 300\n" in exported  # the default, said
    head, tail = exported.split("delete-record:", 1)
    file = tmp_path / "policies.yaml"
    file.write_text(head + "delete-record:" + tail.replace("undo_seconds: 300", "undo_seconds: 0", 1), encoding="utf-8")
    code, out, err = await bot_command("policy", "apply", str(file), "--plan", database_url=database_url)
    assert (code, out.splitlines()) == (0, ["delete-record: undo_seconds: 300 -> 0"]), err
    code, out, err = await bot_command("policy", "apply", str(file), database_url=database_url)
    assert code == 0, err
    code, _, err = await bot_command("policy", "set", "issue-refund", "--undo", "60", database_url=database_url)
    assert code == 0, err
    code, _, err = await bot_command("policy", "set", "issue-refund", "--undo", "soon", database_url=database_url)
    assert code != 0 and "soon" in err
    storage = Storage(database_url)
    try:
        assert (await storage.policies.get("delete-record")).undo_seconds == 0
        assert (await storage.policies.get("issue-refund")).undo_seconds == 60
    finally:
        await storage.close()
