"""`python -m bot policy rules add|remove|move`: an admin's rules on the command line. A condition is
checked against the tool's input schema when it is saved: a syntax error, an unknown field or a wrong
type is refused with one line that names it, and nothing changes; every change is audited."""

from __future__ import annotations

from memory import Storage
from tests.support.processes import bot_command

BIG_REFUND = ("--if", "args.amount > 100.0", "--then", "require_approval", "--name", "経理", "--approvers", "U9")


async def test_rules_are_added_moved_and_removed_and_each_change_is_audited(database_url):
    code, out, err = await bot_command("policy", "rules", "add", "issue-refund", *BIG_REFUND, database_url=database_url)
    assert code == 0, err
    assert "1. if args.amount > 100.0 then require_approval by U9 (named '経理')" in out
    customer = 'args.order_id.startsWith("株式会社テスト")'
    code, out, err = await bot_command(
        "policy", "rules", "add", "issue-refund", "--if", customer, "--then", "refuse", "--at", "1", "--trial",
        database_url=database_url,
    )  # fmt: skip
    assert code == 0, err
    assert f"1. if {customer} then refuse [trial]" in out and "2. if args.amount > 100.0" in out

    code, out, err = await bot_command("policy", "rules", "move", "issue-refund", "1", "2", database_url=database_url)
    assert code == 0, err
    assert "1. if args.amount > 100.0" in out and f"2. if {customer}" in out
    code, out, err = await bot_command("policy", "list", database_url=database_url)
    assert "issue-refund: 2 rule(s), first match wins (version 3)" in out

    code, out, err = await bot_command("policy", "rules", "remove", "issue-refund", "1", database_url=database_url)
    assert code == 0, err
    assert f"1. if {customer} then refuse [trial]" in out and "args.amount" not in out

    storage = Storage(database_url)
    try:
        changes = [e for e in await storage.audit_log.entries() if e.action == "policy_changed"]
    finally:
        await storage.close()
    assert [(e.via, len(e.before["rules"]), len(e.after["rules"])) for e in changes] == [
        ("cli", 0, 1), ("cli", 1, 2), ("cli", 2, 2), ("cli", 2, 1),
    ]  # fmt: skip
    assert changes[0].after["rules"] == [
        {"condition": "args.amount > 100.0", "effect": "require_approval", "name": "経理", "approvers": ["U9"]}
    ]


async def test_a_bad_rule_is_one_line_that_names_it_and_changes_nothing(database_url):
    assert (await bot_command("policy", "rules", "add", "issue-refund", *BIG_REFUND, database_url=database_url))[0] == 0
    for condition, expected in [
        ("args.amount >", "syntax error"),
        ("args.amont > 100.0", "args has no field 'amont' (its fields: amount, order_id, reason)"),
        ('args.amount > "百"', 'args.amount is a double and "百" a string: CEL cannot apply >'),
        ("args.amount > 100", "(write 100.0)"),
        ("args.order_id", "the condition must be true or false"),
        ("customer == 'x'", "unknown name 'customer'"),
        (
            '["株", "式"].exists(x, ["会"].exists(y, y == x))',
            "comprehensions (exists and the like) nest at most 1 deep",
        ),
    ]:
        code, out, err = await bot_command(
            "policy", "rules", "add", "issue-refund", "--if", condition, "--then", "refuse", database_url=database_url
        )
        assert code == 2, (condition, out, err)
        last = err.strip().splitlines()[-1]
        assert expected in last and "rule 2" in last, (condition, err)
        assert "Traceback" not in err
    for args, expected in [
        (("remove", "issue-refund", "5"), "there is no rule 5"),
        (("move", "issue-refund", "1", "3"), "there is no position 3"),
        (("add", "issue-refund", "--if", "true", "--then", "allow", "--approvers", "U2"), "only a rule that requires"),
    ]:
        code, out, err = await bot_command("policy", "rules", *args, database_url=database_url)
        assert code == 2 and expected in err.strip().splitlines()[-1], (args, err)
    code, out, _ = await bot_command("policy", "list", database_url=database_url)
    assert "issue-refund: 1 rule(s), first match wins (version 1)" in out
