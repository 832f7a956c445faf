"""Auto-resume in the team's own language (issue 16), on SQLite and PostgreSQL.

The scripted model reads every reply right, as a capable hosted model does (it answers the extraction
request with the right JSON); what is tested is what the bot then does with that reading: a value the
reply names resumes the call in any script, as written; a refusal in any language resumes with the no,
never with a yes; a hedge or a question back waits; numbers count in any digits and in the number
words of the languages the bot has data for; and a yes/no in a language it has no data for resumes
only when a second reading, the question asked the other way round, agrees."""

from __future__ import annotations

import json

import pytest

from tests.memory.helpers import (
    OPTS,
    ask_to_deploy,
    ask_which_city,
    auto_agent,
    deploy_tool,
    extraction_prompt,
    has_waiting_note,
    state_of,
    weather_tool,
)
from tests.support.scripted_model import call, reply, structured, tool_calls
from tools import create_tool

# -- a value named in the reply, in any script -----------------------------------------------------

NAMED = {  # reply, what the model read, what resumes: the value as the user wrote it
    "zh-hans": ("我在巴黎", "巴黎", "巴黎"),
    "zh-hant": ("台北，謝謝", "台北", "台北"),
    "ko-particle": ("서울로 해주세요", "서울", "서울"),
    "ja": ("東京でお願いします", "東京", "東京"),
    "de": ("Ich bin in München", "München", "München"),
    "fr": ("Je suis à Montréal", "Montréal", "Montréal"),
    "fr-accent-dropped-by-the-model": ("Je suis à Montréal", "Montreal", "Montréal"),
    "en-sentence": ("I'm in Paris, France", "Paris", "Paris"),
    "he-prefix": ("אני בפריז", "פריז", "פריז"),
    "ar": ("أنا في الرياض، شكرا", "الرياض", "الرياض"),
    "full-width": ("ＰＡＲＩＳ、お願いします", "Paris", "PARIS"),
    "accents-added-by-the-model": ("Sao Paulo please", "São Paulo", "Sao Paulo"),
    # a city inside a longer sentence, in every script ("I want to know Shanghai's weather")
    "zh-hans-sentence": ("我想知道上海的天气", "上海", "上海"),
    "zh-hant-sentence": ("我想知道台中的天氣", "台中", "台中"),
    "ja-sentence": ("東京の天気を知りたいです", "東京", "東京"),
    "ko-sentence": ("서울 날씨를 알고 싶어요", "서울", "서울"),
    "en-sentence-weather": ("I'd like to know the weather in Shanghai", "Shanghai", "Shanghai"),
}


@pytest.mark.parametrize(("message", "read_as", "city"), list(NAMED.values()), ids=list(NAMED))
async def test_a_city_named_in_any_script_resumes_the_call_with_it_as_written(model, storage, message, read_as, city):
    weather = weather_tool()
    agent = auto_agent(storage, [weather])
    first = await ask_which_city(model, agent)

    model.structured.push(structured({"city": read_as}))
    model.chat.push(reply(f"{city}: sunny."))
    output = await agent.generate(message, **OPTS)

    assert output.run_id == first.run_id and output.text == f"{city}: sunny."
    assert weather.calls.inputs[-1]["resume_data"] == {"city": city}
    assert [r["result"]["city"] for r in output.tool_results] == [city]
    assert await state_of(agent, first.run_id) == "done"
    assert len(model.structured.requests) == 1
    assert model.unexpected == []


NOT_NAMED = {
    "zh-other-city": ("我在巴黎", "北京"),
    "ko-other-city": ("서울로 해주세요", "부산"),
    "ja-other-city": ("東京でお願いします", "大阪"),
    "de-other-city": ("Ich bin in München", "Berlin"),
    "part-of-a-word": ("I love Parisian food", "Paris"),
    "hangul-inside-a-word": ("경서울 말고요", "서울"),
    "greeting-only": ("你好", "你好"),
    "in-passing": ("I'll be in a meeting for an hour", "meeting"),
    "with-the-thanks-zh": ("北京，谢谢", "北京，谢谢"),
    "with-the-thanks-en": ("Paris, thanks", "Paris, thanks"),
    "the-whole-sentence-es": ("Estoy en Madrid", "Estoy en Madrid"),
    "an-unrelated-sentence-de": ("Ich bin gleich in einem Meeting", "Ich bin gleich in einem Meeting"),
    "with-the-particle-ko": ("서울로 해주세요", "서울로"),
    "a-sentence-it": ("riunione in ufficio per tutto il giorno", "riunione in ufficio per tutto il giorno"),
    # a city met in passing in a sentence about something else waits, in every script
    "in-passing-zh": ("我下午在巴黎开会一个小时", "巴黎"),
    "in-passing-ko": ("지금 회의 중이에요 서울에서", "서울"),
    "in-passing-ja": ("これから大阪で会議があります", "大阪"),
    "in-passing-en": ("I'll be in a meeting in Paris for an hour", "Paris"),
}


@pytest.mark.parametrize(("message", "read_as"), list(NOT_NAMED.values()), ids=list(NOT_NAMED))
async def test_a_city_the_reply_does_not_name_does_not_resume(model, storage, message, read_as):
    weather = weather_tool()
    agent = auto_agent(storage, [weather])
    first = await ask_which_city(model, agent)

    model.structured.push(structured({"city": read_as}))
    model.chat.push(reply("Which city, then?"))
    output = await agent.generate(message, **OPTS)

    assert output.run_id != first.run_id and len(weather.calls) == 1
    assert await state_of(agent, first.run_id) == "suspended"
    assert has_waiting_note(model.chat.requests[-1], "get-weather", "Which city?")


# -- yes and no, in the team's languages ------------------------------------------------------------

YES = {
    "zh-hans": "好的，部署吧",
    "zh-hant": "好的，繼續",
    "ja": "はい、お願いします",
    "ko": "네, 진행해 주세요",
    "es": "sí, adelante",
    "fr": "oui, vas-y",
    "de": "ja, mach das",
    "pt": "sim, pode",
    "it": "sì, procedi",
    "ru": "да, давай",
    "en": "yes, go ahead",
}
NO = {
    "zh-hans": "不要，取消",
    "zh-hant": "不要，先別",
    "ja": "いいえ、やめてください",
    "ko": "아니요, 취소해 주세요",
    "es": "no, cancélalo",
    "fr": "non, annule",
    "de": "nein, abbrechen",
    "pt": "não, cancela",
    "it": "no, annulla",
    "ru": "нет, отмени",
    "en": "no, cancel that",
}
HEDGES = {
    "zh-hans": "也许吧，我再想想",
    "zh-hant": "不確定",
    "zh-question": "你确定吗？",
    "ja": "たぶん",
    "ja-question": "本当にいいですか",
    "ko": "글쎄요",
    "es": "quizás",
    "fr": "peut-être",
    "de": "vielleicht",
    "pt": "talvez",
    "it": "forse",
    "ru": "может быть",
    "en": "maybe",
}


@pytest.mark.parametrize("message", list(YES.values()), ids=list(YES))
async def test_a_clear_yes_in_the_teams_language_resumes_with_yes(model, storage, message):
    deploy = deploy_tool()
    agent = auto_agent(storage, [deploy])
    first = await ask_to_deploy(model, agent)

    model.structured.push(structured({"confirmed": "yes"}))
    model.chat.push(reply("Deployed."))
    output = await agent.generate(message, **OPTS)

    assert output.run_id == first.run_id and output.text == "Deployed."
    assert deploy.runs == [None, {"confirmed": True}]
    assert len(model.structured.requests) == 1  # a language the bot knows: no second reading


@pytest.mark.parametrize("read_as", ["yes", "no", "unclear"])
@pytest.mark.parametrize("message", list(NO.values()), ids=list(NO))
async def test_a_clear_refusal_resumes_with_the_no_whatever_the_model_read(model, storage, message, read_as):
    """Gemma 3 270M answered "yes" to every one of these refusals."""
    deploy = deploy_tool()
    agent = auto_agent(storage, [deploy])
    first = await ask_to_deploy(model, agent)

    model.structured.push(structured({"confirmed": read_as}))
    model.chat.push(reply("Not deploying."))
    output = await agent.generate(message, **OPTS)

    assert output.run_id == first.run_id and output.text == "Not deploying."
    assert deploy.runs == [None, {"confirmed": False}]  # the tool got the no, and decided what it means
    assert [r["result"] for r in output.tool_results] == [{"deployed": False}]
    assert len(model.structured.requests) == 1


@pytest.mark.parametrize("message", list(HEDGES.values()), ids=list(HEDGES))
async def test_a_hedge_or_a_question_back_in_any_language_waits_even_when_read_as_yes(model, storage, message):
    deploy = deploy_tool()
    agent = auto_agent(storage, [deploy])
    first = await ask_to_deploy(model, agent)

    model.structured.push(structured({"confirmed": "yes"}))
    model.chat.push(reply("Should I deploy build 142 now?"))
    output = await agent.generate(message, **OPTS)

    assert output.run_id != first.run_id
    assert deploy.runs == [None]
    assert await state_of(agent, first.run_id, "c_deploy") == "suspended"
    assert len(model.structured.requests) == 1


async def test_a_yes_where_the_words_say_no_never_resumes_as_yes(model, storage):
    """The words and the model must agree on a yes; a yes and a no in one breath is a no."""
    deploy = deploy_tool()
    agent = auto_agent(storage, [deploy])
    first = await ask_to_deploy(model, agent)

    model.structured.push(structured({"confirmed": "yes"}))
    model.chat.push(reply("Not deploying."))
    output = await agent.generate("好的，不要部署", **OPTS)

    assert output.run_id == first.run_id
    assert deploy.runs == [None, {"confirmed": False}]


# -- a language the bot has no words for ----------------------------------------------------------

UNKNOWN_YES = {"pl": "Tak, proszę", "tr": "evet", "hi": "हाँ, कर दो"}
UNKNOWN_NO = {"sv": "Nej tack", "tr": "hayır", "hi": "नहीं"}


@pytest.mark.parametrize("message", list(UNKNOWN_YES.values()), ids=list(UNKNOWN_YES))
async def test_an_unknown_languages_yes_resumes_when_the_reversed_reading_agrees(model, storage, message):
    deploy = deploy_tool()
    agent = auto_agent(storage, [deploy])
    first = await ask_to_deploy(model, agent)

    model.structured.push(structured({"confirmed": "yes"}), structured({"call_off": "no"}))
    model.chat.push(reply("Deployed."))
    output = await agent.generate(message, **OPTS)

    assert output.run_id == first.run_id and deploy.runs == [None, {"confirmed": True}]
    straight, reversed_ = model.structured.requests
    assert "Copy the reply's answer word." in extraction_prompt(straight)
    assert extraction_prompt(reversed_) == (
        f"Someone was asked: Deploy build 142 to production now?\nThey replied: {message}\n\n"
        "Question: did they refuse, so that it must be called off? yes, no or unclear."
    )
    assert reversed_["temperature"] == 0
    assert reversed_["response_format"]["json_schema"]["schema"]["properties"] == {
        "call_off": {"enum": ["yes", "no", "unclear"]}
    }


@pytest.mark.parametrize("message", [*UNKNOWN_YES.values(), *UNKNOWN_NO.values()])
@pytest.mark.parametrize("second", ["yes", "unclear"])
async def test_an_unknown_languages_yes_waits_when_the_reversed_reading_does_not_agree(model, storage, message, second):
    """A model that says yes to everything says yes to "should it be called off?" too."""
    deploy = deploy_tool()
    agent = auto_agent(storage, [deploy])
    first = await ask_to_deploy(model, agent)

    model.structured.push(structured({"confirmed": "yes"}), structured({"call_off": second}))
    model.chat.push(reply("Should I deploy build 142 now?"))
    output = await agent.generate(message, **OPTS)

    assert output.run_id != first.run_id and deploy.runs == [None]
    assert await state_of(agent, first.run_id, "c_deploy") == "suspended"
    assert len(model.structured.requests) == 2


@pytest.mark.parametrize("message", list(UNKNOWN_NO.values()), ids=list(UNKNOWN_NO))
async def test_an_unknown_languages_no_resumes_with_no_when_the_reversed_reading_agrees(model, storage, message):
    deploy = deploy_tool()
    agent = auto_agent(storage, [deploy])
    first = await ask_to_deploy(model, agent)

    model.structured.push(structured({"confirmed": "no"}), structured({"call_off": "yes"}))
    model.chat.push(reply("Not deploying."))
    output = await agent.generate(message, **OPTS)

    assert output.run_id == first.run_id and deploy.runs == [None, {"confirmed": False}]
    assert len(model.structured.requests) == 2


async def test_the_second_reading_is_the_same_request_for_the_same_question_and_reply(model, storage):
    bodies = []
    for thread in ("t-one", "t-two"):
        opts = {"thread_id": thread, "resource_id": "U_ALICE"}
        agent = auto_agent(storage, [deploy_tool()])
        model.chat.push(tool_calls(call("deploy", {}, id=f"c_{thread}")))
        await agent.generate("Deploy build 142", **opts)
        model.structured.push(structured({"confirmed": "yes"}), structured({"call_off": "unclear"}))
        model.chat.push(reply("Should I?"))
        await agent.generate("Tak, proszę", **opts)
        bodies.append(model.structured.requests[-2:])
    assert json.dumps(bodies[0]) == json.dumps(bodies[1])


# -- numbers in the forms people write them --------------------------------------------------------


def trip_tool():
    runs: list = []

    async def execute(input, ctx):
        runs.append(ctx.agent.resume_data)
        if ctx.agent.resume_data is None:
            return await ctx.agent.suspend({"question": "How many days?"})
        return {"days": ctx.agent.resume_data["days"]}

    tool = create_tool(
        id="plan-trip",
        description="Plan a trip",
        input_schema={"type": "object", "properties": {}},
        resume_schema={
            "type": "object",
            "properties": {"days": {"type": "integer"}},
            "required": ["days"],
            "additionalProperties": False,
        },
        execute=execute,
    )
    tool.runs = runs  # type: ignore[attr-defined]
    return tool


NUMBERS = {
    "full-width": ("１２日間", 12),
    "arabic-indic": ("٣ أيام", 3),
    "devanagari": ("५ दिन", 5),
    "zh-numerals": ("三天", 3),
    "ja-numerals": ("十二日間でお願いします", 12),
    "de-compound": ("fünfundzwanzig Tage", 25),
    "fr-hyphen": ("vingt-cinq jours", 25),
    "es": ("diez días", 10),
    "ru": ("двадцать пять дней", 25),
    "ko": ("3일로 해주세요", 3),
    "pt": ("vinte e dois dias", 22),
    "it": ("ventitré giorni", 23),
}


@pytest.mark.parametrize(("message", "days"), list(NUMBERS.values()), ids=list(NUMBERS))
async def test_a_number_in_any_digits_or_known_words_resumes(model, storage, message, days):
    trip = trip_tool()
    agent = auto_agent(storage, [trip])
    model.chat.push(tool_calls(call("plan-trip", {}, id="c_trip")))
    first = await agent.generate("Plan a trip", **OPTS)

    model.structured.push(structured({"days": days}))
    model.chat.push(reply("Planned."))
    output = await agent.generate(message, **OPTS)

    assert output.run_id == first.run_id and trip.runs == [None, {"days": days}]


@pytest.mark.parametrize(("message", "read_as"), [("三天", 5), ("１２日間", 1), ("٣ أيام", 8), ("vingt-cinq", 20)])
async def test_a_number_the_reply_does_not_state_does_not_resume(model, storage, message, read_as):
    trip = trip_tool()
    agent = auto_agent(storage, [trip])
    model.chat.push(tool_calls(call("plan-trip", {}, id="c_trip")))
    first = await agent.generate("Plan a trip", **OPTS)

    model.structured.push(structured({"days": read_as}))
    model.chat.push(reply("How many days?"))
    output = await agent.generate(message, **OPTS)

    assert output.run_id != first.run_id and trip.runs == [None]
