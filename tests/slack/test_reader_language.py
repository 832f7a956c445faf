"""The bot's own words in the reader's language, through the emulated Slack: the Slack locale of `users.info`
(`include_locale`) picks the catalog. A thread is in its starter's language, whoever clicks in it; what one
person sees alone (a modal, an ephemeral message) is in that person's; a person without a locale the bot has
gets `BOT_LANGUAGE`. What a tool wrote ("Which city?") is shown as written."""

from __future__ import annotations

import json

import pytest

from bot.slack.feedback_builder import FEEDBACK
from bot.slack_emulator.app_requests import app_home_opened_event
from bot.slack_emulator.workspace import UserGroup
from memory import PolicyChange
from tests.support.scripted_model import call, failure, reply, tool_calls

from .harness import RunningBot, ask_to_delete, home_of, open_home, running_bot, text_of

# person (Slack locale in tests/support/slack.py) -> what they read: the thinking status, the question's
# line, its Answer button, the modal's title and submit, the empty-field error, the answered note, the thanks
WORDS = {
    "UTW": ("正在思考…", "詢問：", "回答", "送出", "請填寫此欄。", "已回答", "謝謝你的回饋"),
    "UHK": ("正在思考…", "詢問：", "回答", "送出", "請填寫此欄。", "已回答", "謝謝你的回饋"),
    "UCN": ("正在思考…", "询问：", "回答", "发送", "请填写此项。", "已回答", "谢谢你的反馈"),
    "UKO": ("생각 중…", "의 질문:", "답변", "보내기", "이 칸을 채워 주세요.", "답했습니다", "의견 감사합니다"),
    "UJA": (
        "考え中…",
        "からの質問:",
        "回答",
        "送信",
        "入力してください。",
        "回答しました",
        "フィードバックありがとうございます",
    ),
    "U1": ("is thinking…", "asks:", "Answer", "Send", "Fill this in.", "Answered by", "Thanks for your feedback"),
}
CANCEL = {"UTW": "取消", "UHK": "取消", "UCN": "取消", "UKO": "취소", "UJA": "キャンセル", "U1": "Cancel"}
"""The Cancel button of a waiting call, in each person's language."""
EMPTY_CITY = {"field:city": {"value": {"type": "plain_text_input", "value": None}}}


def city(name: str) -> dict:
    return {"field:city": {"value": {"type": "plain_text_input", "value": name}}}


def statuses(bot: RunningBot) -> list[str]:
    return [c.params.get("status") for c in bot.slack.calls_of("assistant.threads.setStatus")]


async def ask_weather(bot: RunningBot, model, user: str):
    """`user` asks in C1; the tool asks them which city. The question's message."""
    model.chat.push(tool_calls(call("get-weather", {}, id="call_1")))
    await bot.mention("天氣如何？ 날씨 어때요?", user=user)
    return await bot.question_message()


async def thumbs_up(bot: RunningBot, message, user: str) -> str:
    """Click 👍 under `message` as `user`; the ephemeral reply they alone got."""
    before = len(bot.slack.calls_of("chat.postEphemeral"))
    block = next(b for b in message.blocks if b.get("type") == "context_actions")
    await bot.sender.click(message, FEEDBACK, user=user, value=block["elements"][0]["positive_button"]["value"])
    ephemerals = await bot.slack.wait_for("chat.postEphemeral", count=before + 1)
    assert ephemerals[-1].params["user"] == user
    return ephemerals[-1].params["text"]


def button_labels(message) -> list[str]:
    return [
        element["text"]["text"]
        for block in message.blocks
        if block.get("type") == "actions"
        for element in block["elements"]
    ]


@pytest.mark.parametrize("user", list(WORDS))
async def test_a_person_reads_the_question_its_form_and_notes_in_their_language(bot: RunningBot, model, user):
    thinking, asks, answer, send, fill_in, answered, thanks = WORDS[user]
    question = await ask_weather(bot, model, user)
    assert thinking in statuses(bot)
    assert asks in question.all_text and "Which city?" in question.all_text  # the tool's words as written
    assert button_labels(question) == [answer, CANCEL[user]]  # whoever may answer may also call it off

    await bot.sender.click(question, "tool_answer", user=user)
    view = (await bot.slack.wait_for("views.open"))[0].params["view"]
    assert view["title"]["text"] == answer and view["submit"]["text"] == send
    status, body = await bot.sender.submit(view, EMPTY_CITY, user=user)
    assert json.loads(body)["errors"] == {"field:city": fill_in}

    model.chat.push(reply("台北：晴天。"))
    status, body = await bot.sender.submit(view, city("台北"), user=user)
    assert status == 200 and body == ""
    await bot.slack.wait_for("chat.update", lambda c: c.params.get("ts") == question.ts)
    assert answered in question.all_text and f"<@{user}>" in question.all_text and "台北" in question.all_text
    assert "<!date^" in question.all_text  # each reader sees the time in their own zone

    stops = await bot.slack.wait_for("chat.stopStream")
    answer_message = bot.slack.message("C1", stops[-1].params["ts"])
    assert answer_message.text == "台北：晴天。"  # the model's words as written
    assert thanks in await thumbs_up(bot, answer_message, user)


@pytest.mark.both_databases
async def test_a_thread_keeps_its_starters_language_when_someone_else_answers(bot: RunningBot, model):
    await bot.storage.policies.set("get-weather", PolicyChange(approvers=["UKO"]))  # who may answer besides UTW
    question = await ask_weather(bot, model, "UTW")
    await bot.sender.click(question, "tool_answer", user="UKO")
    view = (await bot.slack.wait_for("views.open"))[0].params["view"]
    assert view["title"]["text"] == "답변"  # the modal: its one reader's language

    model.chat.push(reply("Seoul: cloudy."))
    await bot.sender.submit(view, city("서울"), user="UKO")
    await bot.slack.wait_for("chat.update", lambda c: c.params.get("ts") == question.ts)
    # the thread's message: its starter's language, not the clicker's
    assert "<@UKO> 於" in question.all_text and "回答" in question.all_text and "답했습니다" not in question.all_text

    # the Korean reader now writes in the thread: the thread still speaks Traditional Chinese
    model.chat.push(tool_calls(call("get-weather", {}, id="call_2")))
    first = bot.slack.calls_of("chat.postMessage")[0].params
    await bot.say("再問一次", user="UKO", thread_ts=first.get("thread_ts"))
    again = await bot.slack.wait_for(
        "chat.postMessage", lambda c: "tool_answer" in str(c.params.get("blocks")), count=2
    )
    assert "詢問：" in str(again[-1].params["blocks"])


@pytest.mark.parametrize("user", ["UFR", "UNONE"])
async def test_a_person_without_a_shipped_locale_reads_bot_language(database_url, slack, model, user):
    async with running_bot(database_url=database_url, slack=slack, language="ja") as bot:
        question = await ask_weather(bot, model, user)
        assert "からの質問:" in question.all_text and button_labels(question) == ["回答", "キャンセル"]
        assert "考え中…" in statuses(bot)


async def test_users_info_gives_the_locale_only_when_asked(bot: RunningBot):
    """As Slack: `locale` comes with `include_locale`, and an unknown method stays an error."""
    client = bot.app.client
    assert "locale" not in (await client.users_info(user="UTW"))["user"]
    assert (await client.users_info(user="UTW", include_locale=True))["user"]["locale"] == "zh-TW"
    assert "locale" not in (await client.users_info(user="UNONE", include_locale=True))["user"]
    with pytest.raises(Exception, match="unknown_method"):
        await client.api_call("users.getLocale")


# person -> the approval's headline, its four buttons, the decided note, their Home's header and section,
# and the ephemeral refusal of a feedback button that rates no answer of the thread
APPROVAL_WORDS = {
    "UTW": ("需要核准", ["核准", "拒絕", "附上原因拒絕", "編輯參數", "取消"], "<@U2> 於", "核准", "*你仍在等待中的請求*", "這個回答已無法評分。"),
    "UCN": ("需要批准", ["批准", "拒绝", "附上原因拒绝", "编辑参数", "取消"], "<@U2> 于", "批准", "*你仍在等待中的请求*", "这个回答已无法评分。"),
    "UKO": ("승인이 필요합니다", ["승인", "거절", "사유와 함께 거절", "인수 편집", "취소"], "<@U2>님이", "승인", "*아직 대기 중인 내 요청*", "이 답변은 더 이상 평가할 수 없습니다."),
    "UJA": ("承認が必要です", ["承認", "却下", "理由を付けて却下", "引数を編集", "キャンセル"], "<@U2> さんが", "承認", "*まだ待機中のあなたのリクエスト*", "この回答はもう評価できません。"),
    "U1": ("Approval needed", ["Approve", "Decline", "Decline with reason", "Edit arguments", "Cancel"], "Approved by <@U2>", "Approvals", "*Your requests still waiting*", "This answer can no longer be rated."),
}  # fmt: skip


ALREADY = {
    "UTW": "此請求已經有人決定了。",
    "UCN": "此请求已经有人决定了。",
    "UKO": "이 요청은 이미 결정되었습니다.",
    "UJA": "このリクエストはすでに決定済みです。",
    "U1": "This request was already decided.",
}


@pytest.mark.parametrize("user", list(APPROVAL_WORDS))
async def test_a_person_reads_the_approval_its_buttons_the_decision_and_their_home(bot: RunningBot, model, user):
    needed, buttons, decided, header, yours, refused = APPROVAL_WORDS[user]
    already = ALREADY[user]
    ask_to_delete(model)
    await bot.mention("請刪除第 3 筆記錄", user=user)
    message = await bot.approval_message()
    message_ref = message.button_value("tool_approve")
    assert needed in message.all_text and "請刪除第 3 筆記錄" in message.all_text  # what they asked, as written
    assert button_labels(message) == buttons

    await open_home(bot, user)
    home = await home_of(bot, user)
    assert home["blocks"][0]["text"]["text"] == header and yours in text_of(home)

    await bot.sender.click(message, "tool_approve", user="U2")  # an English reader approves
    await bot.slack.wait_for("chat.update", lambda c: c.params.get("ts") == message.ts)
    assert decided in message.all_text and "<!date^" in message.all_text  # the thread's language, not U2's

    # a second click, by the person who asked: told alone, in their language, that it was decided already
    await bot.sender.click(message, "tool_approve", user=user, value=message_ref)
    told = await bot.slack.wait_for("chat.postEphemeral")
    assert told[-1].params["user"] == user and told[-1].params["text"] == already

    stops = await bot.slack.wait_for("chat.stopStream")
    answer = bot.slack.message("C1", stops[-1].params["ts"])
    await bot.sender.click(answer, FEEDBACK, user=user, value="up:no-such-run")
    ephemeral = await bot.slack.wait_for("chat.postEphemeral", count=2)
    assert ephemeral[-1].params["text"] == refused


async def test_an_escalations_dm_copies_are_in_each_readers_language(database_url, slack, model, clock):
    """The thread is English (U1's); the copies a Korean and a Japanese on-call person get are in theirs,
    when posted and once decided."""
    slack.workspace.usergroups["S8"] = UserGroup(id="S8", handle="on-call", users=("UKO", "UJA"))
    async with running_bot(database_url=database_url, slack=slack, clock=clock) as bot:
        await bot.storage.policies.set("delete-record", PolicyChange(escalate_to="S8", escalate_after=600))
        ask_to_delete(model)
        await bot.mention("delete record 3", user="U1")
        message = await bot.approval_message()
        clock.advance(601)
        assert len(await bot.agent.escalate_waiting_approvals()) == 1
        posted = [
            bot.slack.posted_by(c)
            for c in bot.slack.calls_of("chat.postMessage")
            if "tool_approve" in str(c.params.get("blocks")) and c.response["channel"] != "C1"
        ]
        copies = {copy.channel: copy for copy in posted}
        assert "에스컬레이션됨" in copies["DUKO"].all_text and "10분" in copies["DUKO"].all_text
        assert "エスカレーション" in copies["DUJA"].all_text and "10 分" in copies["DUJA"].all_text
        assert button_labels(copies["DUKO"])[0] == "승인" and button_labels(copies["DUJA"])[0] == "承認"

        await bot.sender.click(copies["DUKO"], "tool_approve", user="UKO")
        for shown in (message, copies["DUKO"], copies["DUJA"]):
            await bot.slack.wait_for("chat.update", lambda c, ts=shown.ts: c.params.get("ts") == ts)
        assert "Approved by <@UKO>" in message.all_text  # the thread: its starter's English
        assert "<@UKO>님이" in copies["DUKO"].all_text and "승인함" in copies["DUKO"].all_text
        assert "<@UKO> さんが" in copies["DUJA"].all_text and "に承認" in copies["DUJA"].all_text


@pytest.mark.parametrize(
    ("user", "title", "hello"),
    [
        ("UKO", "다음 중 하나를 해 보세요:", "안녕하세요 <@UKO>님!"),
        ("UJA", "次のどれかを試してみてください:", "こんにちは <@UJA> さん！"),
    ],
)
async def test_the_dm_greets_its_person_in_their_language(bot: RunningBot, user, title, hello):
    event = {**app_home_opened_event(user, "messages"), "channel": f"D{user}"}
    assert (await bot.sender.event(event))[0] == 200
    [prompts] = await bot.slack.wait_for("assistant.threads.setSuggestedPrompts")
    assert prompts.params["title"] == title
    [greeting] = await bot.slack.wait_for("chat.postMessage", lambda c: c.params.get("channel") == f"D{user}")
    assert greeting.params["text"].startswith(hello) and "`delete-record`" in greeting.params["text"]


async def test_a_queued_message_is_told_so_in_the_threads_language(database_url, slack, model):
    model.chat.push(failure("timeout", seconds=2.0, then=reply("慢的回答。")), reply("下一個回答。"))
    async with running_bot(database_url=database_url, slack=slack, queued_notice_after=0.3) as bot:
        first = await bot.mention("第一則", user="UTW")
        await bot.say("second", user="UKO", thread_ts=first["ts"])  # a Korean reader writes in the thread
        queued = "你的訊息已排入佇列：前面的訊息處理完後我就會回覆。"
        notices = await slack.wait_for("chat.postMessage", lambda c: c.params.get("text") == queued)
        assert notices[0].params["thread_ts"] == first["ts"]


async def test_the_rules_refusal_and_who_may_approve_are_in_the_readers_language(bot: RunningBot, model):
    await bot.storage.policies.set("delete-record", PolicyChange(self_approval=False))
    ask_to_delete(model)
    await bot.mention("기록 3 삭제", user="UKO")
    message = await bot.approval_message()
    assert "승인할 수 있는 사람: 대화에 있는 누구나(요청한 <@UKO>님 제외)" in message.all_text

    await bot.sender.click(message, "tool_approve", user="UKO")  # the requester may not approve it
    told = await bot.slack.wait_for("chat.postEphemeral")
    assert (
        told[-1].params["text"]
        == "`delete-record`의 정책상 자신의 요청은 승인할 수 없습니다. 다른 사람에게 부탁하세요."
    )


# an admin (by BOT_ADMINS) -> the policy form's refusals of "²" as the expiry and of a rule line that does not
# parse, in that admin's language; the rule's own words stay as typed
FORM_REFUSALS = {
    "U1": ("'²' is not a whole number of seconds: an expiry is 1 second to 365 days", "line 1: write `if "),
    "UTW": ("'²' 不是整數秒數：逾期時間為 1 秒到 365 天", "第 1 行：請寫成 `if "),
    "UCN": ("'²' 不是整数秒数：过期时间为 1 秒到 365 天", "第 1 行：请写成 `if "),
    "UKO": ("'²'은(는) 초 단위의 정수가 아닙니다: 만료 시간은 1초에서 365일", "1번째 줄: `if "),
    "UJA": ("'²' は秒数の整数ではありません：有効期限は 1 秒から 365 日", "1 行目：`if "),
}


@pytest.mark.parametrize("admin", list(FORM_REFUSALS))
async def test_the_policy_forms_refusals_are_in_the_admins_language(database_url, slack, model, admin):
    from .harness import modal_values, opened_policy_modal

    expiry_refusal, rule_refusal = FORM_REFUSALS[admin]
    async with running_bot(database_url=database_url, slack=slack, admins=(admin,)) as bot:
        view = await opened_policy_modal(bot, "delete-record", user=admin)
        status, body = await bot.sender.submit(view, modal_values(expiry="²"), user=admin)
        assert status == 200 and expiry_refusal in json.loads(body)["errors"]["policy_expiry"], body

        rules = {"policy_rules": {"value": {"type": "plain_text_input", "value": "si args.id > 3 alors refuse"}}}
        status, body = await bot.sender.submit(view, {**modal_values(), **rules}, user=admin)
        assert status == 200 and rule_refusal in json.loads(body)["errors"]["policy_rules"], body
        assert (await bot.storage.policies.get("delete-record")).version == 0  # nothing was stored
