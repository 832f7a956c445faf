"""The offline demo model: its rules, and its OpenAI-compatible endpoint as the openai client uses it."""

from __future__ import annotations

import json

import openai
import pytest

from bot.agent.languages import languages
from bot.playground.demo_model import answer, city_in, structured_answer, summarise, wanted_tool

DEMO_TOOLS = ["list-records", "delete-record", "issue-refund", "get-weather"]


def tools(*names):
    return [{"type": "function", "function": {"name": n, "parameters": {"type": "object"}}} for n in names]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("delete record 3", ("delete-record", {"id": 3})),
        ("<@UBOB> says: please remove record #12", ("delete-record", {"id": 12})),
        ("refund $25 for order A-1001", ("issue-refund", {"order_id": "A-1001", "amount": 25})),
        (
            "refund 12.50 dollars on order 77 because it broke",
            ("issue-refund", {"order_id": "77", "amount": 12.5, "reason": "it broke"}),
        ),
        ("refund my order", ("issue-refund", {})),  # nothing made up: the model asks (below)
        ("what's the weather?", ("get-weather", {})),
        ("weather in new york please", ("get-weather", {"city": "New York"})),
        ("list records", ("list-records", {})),
        ("hello", None),
    ],
)
def test_rules(text, expected):
    assert wanted_tool(text) == expected


@pytest.mark.parametrize(
    ("text", "order_id", "amount"),
    [
        ("refund order A-1 $30", "A-1", 30),  # the README's phrase: the order's digits are not the amount
        ("<@U0BOT> refund order A-1 $30", "A-1", 30),
        ("refund A-1 30 dollars", "A-1", 30),
        ("refund order 42 of 19.99 USD", "42", 19.99),
        ("refund 1 order, B-7, $45", "B-7", 45),  # a sign before a number wins over a number before a word
        ("請幫我退款 訂單 B-22 ３０ドル", "B-22", 30),  # full-width digits
        ("退款 订单 A-7 30美元", "A-7", 30),
        ("注文 C-3 を返金して 500円", "C-3", 500),
        ("주문 D-4 환불 5000원", "D-4", 5000),
        ("reembolso del pedido E-5 de 40 dólares", "E-5", 40),
        ("rembourser la commande F-6 12,50 €", "F-6", 12.5),
        ("استرداد طلب G-7 $15", "G-7", 15),
    ],
)
def test_a_refund_reads_the_amount_and_the_order_apart(text, order_id, amount):
    name, args = wanted_tool(text)
    assert name == "issue-refund"
    assert (args["order_id"], args["amount"]) == (order_id, amount)


@pytest.mark.parametrize(
    ("text", "city"),
    [
        ("Paris", "Paris"),
        ("berlin", "Berlin"),
        ("I'm in Lisbon today", "Lisbon"),
        ("delete record 3", None),
        ("ok thanks", None),
    ],
)
def test_a_city_looking_word(text, city):
    assert city_in(text) == city


@pytest.mark.parametrize(
    ("text", "city"),
    [
        ("我在台北", "台北"),
        ("台北", "台北"),
        ("我在巴黎", "巴黎"),  # the README's example
        ("我现在在上海呢", "上海"),
        ("서울이요", "서울"),
        ("東京にいます", "東京"),
        ("パリにいます", "パリ"),
        ("أنا في القاهرة", "القاهرة"),
        ("Я в Москве", "Москве"),
        ("是的", None),
        ("아니요", None),
        ("いいえ、まだです", None),
        ("لا", None),
    ],
)
def test_a_city_in_any_script(text, city):
    """Its city reader matched Latin letters only: 我在台北 got the generic help and the question waited."""
    assert city_in(text) == city


def test_yes_and_no_in_every_language_of_the_bots_language_data():
    """The words come from `bot/agent/languages/`, the data auto-resume reads with; the demo knew six
    English words."""
    confirm = {"type": "object", "properties": {"confirmed": {"type": "boolean"}}, "required": ["confirmed"]}
    for language in languages():
        for kind, expected in (("yes", True), ("no", False)):
            word = sorted(language.entries[kind], key=len)[-1]
            said = structured_answer(*extraction(word, ("deploy", confirm)))  # a boolean is asked as yes/no
            assert said == {"confirmed": "yes" if expected else "no"}, (language.code, word)
            assert typed_answer(word, confirm) == {"confirmed": expected}, (language.code, word)


def typed_answer(reply, schema):
    """The structured answer to a plain `response_format` request for `schema` (as a tool's own may be)."""
    return structured_answer([{"role": "user", "content": f"Reply: {reply}"}], schema)


REFUND = {
    "type": "object",
    "properties": {
        "order_id": {"type": "string", "description": "The order to refund"},
        "amount": {"type": "number", "description": "Amount to refund, in dollars"},
        "reason": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
    },
    "required": ["order_id", "amount"],
}


@pytest.mark.parametrize(
    ("text", "missing"),
    [
        ("issue a refund for an order", ["order_id", "amount"]),  # the DM's suggested prompt
        ("refund my order", ["order_id", "amount"]),
        ("refund order A-7", ["amount"]),
        ("退款 30美元", ["order_id"]),
    ],
)
def test_a_refund_without_its_order_or_amount_asks_for_them(text, missing):
    """It made up order A-1001 and $10, and the approval card showed a refund nobody asked for."""
    reply = answer({"messages": [{"role": "user", "content": text}], "tools": [function("issue-refund", REFUND)]})
    assert reply.tool_calls == []
    assert reply.text.startswith("To run `issue-refund` I still need "), reply.text
    for field_name in missing:
        assert f"`{field_name}`" in reply.text
    assert "A-1001" not in reply.text and "10" not in reply.text


INVOICE = {
    "type": "object",
    "properties": {
        "customer": {"type": "string"},
        "amount": {"type": "number"},
        "paid": {"type": "boolean"},
        "lines": {"type": "array", "items": {"type": "string"}},
        "currency": {"enum": ["EUR", "JPY"]},
    },
    "required": ["customer", "amount"],
}


@pytest.mark.parametrize(
    ("text", "args"),
    [
        ("send-invoice customer=ACME amount=30", {"customer": "ACME", "amount": 30}),
        (
            '<@U0BOT> please send-invoice customer="株式会社 ACME" amount=12.5 paid=はい currency=jpy',
            {"customer": "株式会社 ACME", "amount": 12.5, "paid": True, "currency": "JPY"},
        ),
        (
            'send-invoice customer=ACME amount=3 lines=["a","b"] paid=no',
            {"customer": "ACME", "amount": 3, "lines": ["a", "b"], "paid": False},
        ),  # fmt: skip
        ("send an invoice to customer=Zoë amount=7", {"customer": "Zoë", "amount": 7}),
    ],
)
def test_any_tool_is_called_by_its_name_and_fields(text, args):
    """A custom agent's tools did nothing offline ("this agent has no tools I know")."""
    reply = answer({"messages": [{"role": "user", "content": text}], "tools": [function("send-invoice", INVOICE)]})
    assert [(c["function"]["name"], json.loads(c["function"]["arguments"])) for c in reply.tool_calls] == [
        ("send-invoice", args)
    ]


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("send-invoice customer=ACME", "I still need `amount`"),
        ("send-invoice", "I still need `customer` and `amount`"),
        ("send-invoice customer=ACME amount=thirty", "`amount` must be a number"),
        ("send-invoice customer=ACME amount=3 currency=USD", "`currency` must be one of EUR, JPY"),
    ],
)
def test_a_tool_whose_fields_are_missing_or_wrong_is_asked_about(text, says):
    reply = answer({"messages": [{"role": "user", "content": text}], "tools": [function("send-invoice", INVOICE)]})
    assert reply.tool_calls == [] and says in reply.text, reply.text
    assert "send-invoice customer=" in reply.text  # how to say it


def function(name, parameters):
    return {"type": "function", "function": {"name": name, "parameters": parameters}}


def extraction(message, *tools):
    """The auto-resume extraction request for one waiting get-weather call, or for several tools."""
    from bot.agent._autoresume import extraction_request
    from memory import StoredToolCall

    city = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    calls = [
        StoredToolCall(
            run_id="run-1",
            tool_call_id=f"call_{n}",
            agent_id="demo",
            step=0,
            position=n,
            tool_name=name,
            state="suspended",
            suspend_payload={"question": "?"},
            resume_schema=schema,
        )  # fmt: skip
        for n, (name, schema) in enumerate(tools or [("get-weather", city)])
    ]
    return extraction_request(calls, message)


def test_the_extraction_answers_the_waiting_call_or_nothing():
    assert structured_answer(*extraction("Madrid")) == {"city": "Madrid"}
    assert structured_answer(*extraction("delete record 2")) == {"city": None}
    yes = {"type": "object", "properties": {"confirmed": {"type": "boolean"}}, "required": ["confirmed"]}
    city = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    assert structured_answer(*extraction("Oslo", ("deploy", yes), ("get-weather", city))) == {
        "deploy": {"confirmed": "unclear"},  # a boolean is asked as yes, no or unclear
        "get-weather": {"city": "Oslo"},
    }


def test_a_tool_result_is_summarised():
    assert summarise("delete-record", '{"deleted": true, "id": 2}') == "Done: record 2 is deleted."
    assert "no record 9" in summarise("delete-record", '{"deleted": false, "id": 9}')
    assert summarise("issue-refund", '{"refund_id": 1, "order_id": "A-1", "amount": 5}').startswith("Refund #1")
    assert "Oslo" in summarise("get-weather", '{"city": "Oslo", "temperature_c": 3, "conditions": "windy"}')
    declined = "The user did not approve this tool call, so it was not run. Reason: too much"
    assert summarise("issue-refund", declined) == "OK, I did not run `issue-refund`: too much"
    expired = "Nobody approved this tool call in time: the approval request expired, so it was not run. (nobody decided within 30 s)"
    assert (
        summarise("delete-record", expired) == "I did not run `delete-record`: nobody decided within 30 s."
    )  # not "said:"


def test_a_tool_the_request_does_not_offer_is_never_called():
    reply = answer({"messages": [{"role": "user", "content": "delete record 3"}], "tools": tools("get-weather")})
    assert reply.tool_calls == [] and "weather" in reply.text


def test_after_a_tool_call_the_result_is_summarised():
    call = {"id": "c1", "type": "function", "function": {"name": "delete-record", "arguments": '{"id": 2}'}}
    messages = [
        {"role": "user", "content": "delete record 2"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": '{"deleted": true, "id": 2}'},
    ]
    assert answer({"messages": messages, "tools": tools(*DEMO_TOOLS)}).text == "Done: record 2 is deleted."


@pytest.fixture
def client(playground):
    return openai.AsyncOpenAI(base_url=f"{playground.url}/v1", api_key="demo", max_retries=0)


async def test_the_endpoint_streams_a_tool_call(client):
    stream = await client.chat.completions.create(
        model="demo",
        messages=[{"role": "user", "content": "delete record 3"}],
        tools=tools(*DEMO_TOOLS),
        stream=True,
        stream_options={"include_usage": True},
    )
    name, arguments, finish, usage = "", "", None, None
    async for chunk in stream:
        usage = chunk.usage or usage
        for choice in chunk.choices:
            for part in choice.delta.tool_calls or []:
                name += part.function.name or ""
                arguments += part.function.arguments or ""
            finish = choice.finish_reason or finish
    assert (name, json.loads(arguments), finish) == ("delete-record", {"id": 3}, "tool_calls")
    assert usage is not None and usage.total_tokens > 0


async def test_the_endpoint_answers_in_one_piece_and_with_structured_output(client):
    completion = await client.chat.completions.create(model="demo", messages=[{"role": "user", "content": "hi"}])
    assert "demo model" in completion.choices[0].message.content

    messages, schema = extraction("Rome")
    structured = await client.chat.completions.create(
        model="demo",
        messages=messages,
        temperature=0,
        response_format={"type": "json_schema", "json_schema": {"name": "reply_reading", "schema": schema}},
    )
    assert json.loads(structured.choices[0].message.content) == {"city": "Rome"}
