"""The runtime's one rule of who may act on a waiting call, without Slack: `authorize` on its own, and
`Agent.decide_as` answering with one typed result (decided, counted, refused, already decided, gone,
invalid), each refusal one `refused` audit line."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from bot.agent import (
    Action,
    AlreadyDecided,
    Approve,
    Counted,
    Decided,
    Decline,
    DirectoryUnavailableError,
    Gone,
    GrantRequest,
    Invalid,
    RefusalReason,
    Refused,
    Resume,
)
from bot.agent._authorize import Asked, authorize
from memory import Memory, PolicyChange, ToolPolicy
from tests.runtime.helpers import collect, make_agent, one, record_tool, weather_tool
from tests.support.scripted_model import call, reply, structured, tool_calls


class People:
    """A directory of this test's own: a few groups, an admin, who is in which thread."""

    def __init__(self, *, groups=None, admins=(), members=None, down: bool = False):
        self.groups = groups or {}
        self.admins = set(admins)
        self.members = members or {}
        self.down = down

    async def is_among(self, person: str, approvers: Sequence[str]) -> bool:
        if self.down:
            raise DirectoryUnavailableError("the directory is down")
        return person in approvers or any(person in self.groups.get(a, ()) for a in approvers)

    async def is_admin(self, person: str) -> bool:
        return person in self.admins

    async def in_conversation(self, person: str, thread_id: str) -> bool:
        return thread_id not in self.members or person in self.members[thread_id]


def asked(actor, action=Action.APPROVE, **kw) -> Asked:
    return Asked(
        actor=actor, action=action, tool_name="delete-record", requester=kw.pop("requester", "U1"),
        thread_id=kw.pop("thread_id", "t1"), **kw,
    )  # fmt: skip


async def reason(a: Asked, policy: ToolPolicy, people: People | None = None) -> RefusalReason | None:
    refusal = await authorize(a, policy, people or People())
    return None if refusal is None else refusal.reason


@pytest.mark.parametrize(
    ("policy", "who", "action", "expected"),
    [
        (ToolPolicy(tool_name="delete-record"), "U2", Action.APPROVE, None),
        (ToolPolicy(tool_name="delete-record", approvers=("U9",)), "U2", Action.APPROVE, RefusalReason.NOT_AN_APPROVER),
        (ToolPolicy(tool_name="delete-record", approvers=("S1",)), "U7", Action.DECLINE, None),  # in group S1
        (ToolPolicy(tool_name="delete-record", approvers=("U9",)), "U1", Action.DECLINE, None),  # the requester
        (ToolPolicy(tool_name="delete-record", self_approval=False), "U1", Action.APPROVE, RefusalReason.SELF_APPROVAL),
        (ToolPolicy(tool_name="delete-record", mode="disabled"), "U2", Action.EDIT, RefusalReason.TOOL_DISABLED),
        (ToolPolicy(tool_name="delete-record", mode="disabled"), "U2", Action.DECLINE, None),
        (ToolPolicy(tool_name="delete-record", approvals_required=2), "U1", Action.APPROVE,
         RefusalReason.REQUESTER_CANNOT_COUNT),
        (ToolPolicy(tool_name="delete-record", approvals_required=2), "U2", Action.EDIT, RefusalReason.EDIT_NOT_ALLOWED),
        (ToolPolicy(tool_name="delete-record"), "U2", Action.ANSWER, RefusalReason.NOT_THE_SPEAKER),
        (ToolPolicy(tool_name="delete-record"), "U1", Action.ANSWER, None),
        (ToolPolicy(tool_name="delete-record", approvers=("U9",)), "U9", Action.ANSWER, None),
        (ToolPolicy(tool_name="delete-record"), "UADMIN", Action.CANCEL, None),  # admins may always cancel
        (ToolPolicy(tool_name="delete-record"), "U2", Action.CANCEL, RefusalReason.NOT_THE_SPEAKER),
        (ToolPolicy(tool_name="delete-record"), "UOUT", Action.APPROVE, RefusalReason.NOT_IN_CONVERSATION),
    ],
)  # fmt: skip
async def test_the_rule(policy, who, action, expected):
    people = People(groups={"S1": {"U7"}}, admins={"UADMIN"}, members={"t1": {"U1", "U2", "U7", "U9", "UADMIN"}})
    assert await reason(asked(who, action), policy, people) == expected


async def test_four_eyes_refuses_a_second_approval_by_the_same_person_and_other_arguments():
    policy = ToolPolicy(tool_name="delete-record", approvals_required=2)
    assert await reason(asked("U2", approvals=("U2",)), policy) == RefusalReason.ALREADY_APPROVED_BY_YOU
    assert await reason(asked("U3", approvals=("U2",), approvals_for_other_args=True), policy) == (
        RefusalReason.ARGS_CHANGED
    )
    assert await reason(asked("U3", approvals=("U2",)), policy) is None


async def test_a_directory_that_cannot_answer_refuses_and_says_so():
    refusal = await authorize(asked("U2"), ToolPolicy(tool_name="delete-record", approvers=("S1",)), People(down=True))
    assert refusal is not None and refusal.reason == RefusalReason.DIRECTORY_UNAVAILABLE
    assert "the directory is down" in refusal.text()


async def test_the_refusal_names_who_may_decide_instead():
    refusal = await authorize(asked("U2"), ToolPolicy(tool_name="delete-record", approvers=("U9", "S1")), People())
    assert refusal is not None and refusal.may_instead == ("U9", "S1")
    assert refusal.text() == "Only U9 or the members of user group S1 may decide delete-record requests."


async def test_decide_as_answers_with_one_result_for_each_outcome(model, storage):
    tool = record_tool("delete-record")
    agent = make_agent([tool], storage=storage)
    agent.attach(directory=People())
    await storage.policies.set("delete-record", PolicyChange(approvals_required=2, approvers=["U2", "U3", "U9"]))
    model.chat.push(tool_calls(call("delete-record", {"id": "三"}, id="c1")), reply("削除しました。"))
    approval = one(await collect(await agent.stream("記録三を削除", resource_id="U1")), "tool-call-approval")
    run_id = approval.run_id

    refused = await agent.decide_as(run_id, "c1", Approve(), actor="U7", via="api")
    assert isinstance(refused, Refused) and refused.reason == RefusalReason.NOT_AN_APPROVER
    assert refused.may_instead == ("U2", "U3", "U9")
    counted = await agent.decide_as(run_id, "c1", Approve(), actor="U2", via="api")
    assert isinstance(counted, Counted) and counted.approvals == ("U2",) and counted.needed == 2
    again = await agent.decide_as(run_id, "c1", Approve(), actor="U2", via="api")
    assert isinstance(again, Refused) and again.reason == RefusalReason.ALREADY_APPROVED_BY_YOU
    decided = await agent.decide_as(run_id, "c1", Approve(), actor="U3", via="api")
    assert isinstance(decided, Decided) and decided.approvals == ("U2", "U3")
    assert decided.record.state == "approved" and decided.record.decided_by == "U3"
    await collect(decided.stream)
    assert len(tool.calls) == 1
    late = await agent.decide_as(run_id, "c1", Decline(), actor="U9", via="api")
    assert isinstance(late, AlreadyDecided) and late.record.state == "done"
    assert isinstance(await agent.decide_as("no-run", "c1", Approve(), actor="U2"), Gone)

    lines = [(e.action, e.actor) for e in await storage.audit_log.entries() if e.run_id == run_id]
    assert lines == [
        ("requested", "U1"), ("refused", "U7"), ("approved", "U2"), ("refused", "U2"), ("approved", "U3"),
        ("executed", "system"), ("refused", "U9"),  # the late decline: it no longer waits, said once
    ]  # fmt: skip


async def test_a_grant_the_policy_does_not_allow_is_refused_and_one_it_allows_is_in_the_result(model, storage):
    agent = make_agent([record_tool("delete-record")], storage=storage, memory=Memory(storage))
    model.chat.push(tool_calls(call("delete-record", {"id": "一"}, id="c1")), reply("はい。"))
    approval = one(await collect(await agent.stream("消して", thread_id="t1", resource_id="U1")), "tool-call-approval")
    asked_grant = Approve(grant=GrantRequest(same_arguments=True))
    refused = await agent.decide_as(approval.run_id, "c1", asked_grant, actor="U2")
    assert isinstance(refused, Refused) and refused.reason == RefusalReason.GRANT_NOT_ALLOWED
    await storage.policies.set("delete-record", PolicyChange(grant_seconds=600))
    decided = await agent.decide_as(approval.run_id, "c1", asked_grant, actor="U2")
    assert isinstance(decided, Decided) and decided.grant is not None
    assert decided.grant.granted_by == "U2" and decided.grant.same_arguments
    await collect(decided.stream)


async def test_only_the_requester_answers_and_bad_data_is_invalid(model, storage):
    executions: list = []
    agent = make_agent([weather_tool(executions)], storage=storage, memory=Memory(storage))
    model.chat.push(tool_calls(call("get-weather", {}, id="c1")), reply("ソウルは晴れ。"))
    suspended = one(await collect(await agent.stream("天気?", thread_id="t1", resource_id="U1")), "tool-call-suspended")
    run_id = suspended.run_id
    bystander = await agent.decide_as(run_id, "c1", Resume({"city": "서울"}), actor="U2", via="api")
    assert isinstance(bystander, Refused) and bystander.reason == RefusalReason.NOT_THE_SPEAKER
    assert bystander.may_instead == ("U1",)
    invalid = await agent.decide_as(run_id, "c1", Resume({"town": 3}), actor="U1", via="api")
    assert isinstance(invalid, Invalid)
    answered = await agent.decide_as(run_id, "c1", Resume({"city": "서울"}), actor="U1", via="api")
    assert isinstance(answered, Decided) and answered.record.decided_by == "U1"
    await collect(answered.stream)
    assert executions[-1]["resume_data"] == {"city": "서울"}


async def test_a_bystanders_message_in_the_thread_is_not_read_as_an_answer(model, storage):
    executions: list = []
    agent = make_agent(
        [weather_tool(executions)], storage=storage, memory=Memory(storage),
        default_options={"auto_resume_suspended_tools": True},
    )  # fmt: skip
    model.chat.push(tool_calls(call("get-weather", {}, id="c1")))
    await collect(await agent.stream("天気?", thread_id="t1", resource_id="U1", request_context={"requester": "U1"}))
    model.chat.push(reply("ボブさん、こんにちは。"))
    await collect(await agent.stream("巴黎", thread_id="t1", resource_id="U1", request_context={"requester": "U2"}))
    assert model.structured.requests == []  # never asked whether Bob answered Alice's question
    model.structured.push(structured({"city": "巴黎"}))
    model.chat.push(reply("巴黎は晴れ。"))
    await collect(await agent.stream("我在巴黎", thread_id="t1", resource_id="U1", request_context={"requester": "U1"}))
    resumed = [e for e in await storage.audit_log.entries() if e.action == "resumed"]
    assert [(e.actor, e.via) for e in resumed] == [("U1", "thread")]
