"""The labelled cases of the extraction benchmark: a question a tool asked with `suspend()`, the user's
next message in the thread, and what a careful reader takes from it: the resume data of the call it
answers, or nothing (the call must keep waiting).

`expect` is None when the message must not resume anything; else `(tool, data)`, where a value may be a
tuple of acceptable alternatives ("New York" or "New York City"). Strings compare without case.
Cases marked `held_out` were not looked at while the extraction was tuned; they are reported apart.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Waiting:
    """A tool call parked by `suspend()`."""

    tool: str
    asked: Any
    resume_schema: dict[str, Any]
    args: dict[str, Any]


@dataclass(frozen=True)
class Case:
    id: str
    category: str
    waiting: tuple[Waiting, ...]
    message: str
    expect: tuple[str, dict[str, Any]] | None
    held_out: bool = False
    language: str = "en"
    """The language of the message (a data file of `bot/agent/languages/`, or another one for the
    `other-language` cases: a language the bot has no words for)."""


def _obj(**properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties), "additionalProperties": False}


BOOL, STR, INT, NUM = {"type": "boolean"}, {"type": "string"}, {"type": "integer"}, {"type": "number"}

DEPLOY = Waiting("deploy", {"question": "Deploy build 142 to production now?"}, _obj(confirmed=BOOL), {"build": 142})
DROP = Waiting(
    "drop-table", {"question": "This drops the table orders for good. Are you sure?"}, _obj(confirmed=BOOL), {}
)
MAIL = Waiting("send-newsletter", {"question": "Send the newsletter to all 240 customers?"}, _obj(send=BOOL), {})
WEATHER = Waiting("get-weather", {"question": "Which city?"}, _obj(city=STR), {"when": "tomorrow"})
INVITE = Waiting("send-invite", {"question": "Who should I invite?"}, _obj(name=STR), {"event": "launch party"})
TRANSFER = Waiting("transfer", {"question": "How much should I transfer, in dollars?"}, _obj(amount=NUM), {})
TRIP = Waiting("plan-trip", {"question": "How many days?"}, _obj(days=INT), {"to": "Japan"})
VM = Waiting("create-vm", {"question": "How much memory, in GB?"}, _obj(memory_gb=INT), {"name": "ci-runner"})
BUDGET = Waiting("set-budget", {"question": "What is the monthly budget in USD?"}, _obj(amount_usd=NUM), {})
TICKET = Waiting(
    "open-ticket",
    {"question": "What priority: low, medium or high?"},
    _obj(priority={"type": "string", "enum": ["low", "medium", "high"]}),
    {"title": "Login page is slow"},
)
TARGET = Waiting(
    "deploy-service",
    {"question": "Which environment?"},
    _obj(environment={"type": "string", "enum": ["staging", "production"]}),
    {"service": "billing"},
)
COFFEE = Waiting(
    "order-coffee",
    {"question": "What size?"},
    _obj(size={"type": "string", "enum": ["small", "medium", "large"]}),
    {"drink": "latte"},
)
TABLE = Waiting("book-table", {"question": "For which day, and for how many people?"}, _obj(day=STR, people=INT), {})
FLIGHT = Waiting(
    "search-flights", {"question": "From which city to which city?"}, _obj(origin=STR, destination=STR), {}
)
MEETING = Waiting("schedule-meeting", {"question": "Which day, and how many minutes?"}, _obj(day=STR, minutes=INT), {})
DATE = Waiting("reserve-room", {"question": "Which date?"}, _obj(date=STR), {"room": "Aurora"})


def _cases() -> list[Case]:
    cases: list[Case] = []

    def add(category: str, waiting, message: str, expect, *, held_out: bool = False, language: str = "en") -> None:
        waiting = waiting if isinstance(waiting, tuple) else (waiting,)
        prefix = category if language == "en" else f"{language}-{category}"
        cases.append(Case(f"{prefix}-{len(cases) + 1:02d}", category, waiting, message, expect, held_out, language))

    # confirmations: yes in many phrasings
    for message, held in [
        ("yes", False),
        ("Yes please", False),
        ("go ahead", False),
        ("sure, do it", False),
        ("yep", True),
        ("ok, deploy it", False),
        ("confirmed", True),
        ("absolutely, ship it", False),
    ]:
        add("confirm-yes", DEPLOY, message, ("deploy", {"confirmed": True}), held_out=held)
    add("confirm-yes", DROP, "yes, I'm sure", ("drop-table", {"confirmed": True}))
    add("confirm-yes", MAIL, "yes, send it", ("send-newsletter", {"send": True}), held_out=True)

    # confirmations: no, negations, not yet
    for message, held in [
        ("no", False),
        ("No.", False),
        ("nope", False),
        ("don't", False),
        ("not yet", False),
        ("no, wait until tomorrow", True),
        ("cancel", False),
        ("stop, don't deploy", False),
        ("absolutely not", True),
        ("I'd rather not", False),
    ]:
        add("confirm-no", DEPLOY, message, ("deploy", {"confirmed": False}), held_out=held)
    add("confirm-no", DROP, "no, keep it", ("drop-table", {"confirmed": False}))
    add("confirm-no", MAIL, "do not send it", ("send-newsletter", {"send": False}), held_out=True)

    # hedges: no yes and no no given, so the call keeps waiting
    for message, held in [
        ("maybe", False),
        ("I'm not sure", False),
        ("let me check with the team first", False),
        ("hmm", True),
        ("it depends on the tests", False),
    ]:
        add("hedge", DEPLOY, message, None, held_out=held)

    # cities and names
    add("city-name", WEATHER, "Paris", ("get-weather", {"city": "Paris"}))
    add("city-name", WEATHER, "paris please", ("get-weather", {"city": "Paris"}))
    add("city-name", WEATHER, "In Lyon.", ("get-weather", {"city": "Lyon"}))
    add("city-name", WEATHER, "São Paulo", ("get-weather", {"city": "São Paulo"}), held_out=True)
    add("city-name", WEATHER, "New York City", ("get-weather", {"city": ("New York City", "New York")}))
    add("city-name", INVITE, "Invite Maria Lopez", ("send-invite", {"name": "Maria Lopez"}))
    add("city-name", INVITE, "bob", ("send-invite", {"name": "Bob"}))
    add("city-name", INVITE, "Ahmed, please", ("send-invite", {"name": "Ahmed"}), held_out=True)

    # numbers with units
    add("number", TRANSFER, "20 dollars", ("transfer", {"amount": 20}))
    add("number", TRANSFER, "twenty dollars", ("transfer", {"amount": 20}))
    add("number", TRANSFER, "$1,500", ("transfer", {"amount": 1500}))
    add("number", BUDGET, "5k", ("set-budget", {"amount_usd": 5000}))
    add("number", TRIP, "3 days", ("plan-trip", {"days": 3}))
    add("number", TRIP, "five", ("plan-trip", {"days": 5}), held_out=True)
    add("number", VM, "16 GB", ("create-vm", {"memory_gb": 16}))
    add("number", TRANSFER, "let's do 2.5", ("transfer", {"amount": 2.5}), held_out=True)

    # enums
    add("enum", TICKET, "high", ("open-ticket", {"priority": "high"}))
    add("enum", TICKET, "High priority please", ("open-ticket", {"priority": "high"}))
    add("enum", TICKET, "medium is fine", ("open-ticket", {"priority": "medium"}), held_out=True)
    add("enum", TARGET, "prod", ("deploy-service", {"environment": "production"}))
    add("enum", TARGET, "staging", ("deploy-service", {"environment": "staging"}))
    add("enum", COFFEE, "Large", ("order-coffee", {"size": "large"}))
    add("enum", COFFEE, "a small one", ("order-coffee", {"size": "small"}), held_out=True)

    # several fields at once
    add("multi-field", TABLE, "Friday, 4 people", ("book-table", {"day": "Friday", "people": 4}))
    add("multi-field", TABLE, "saturday for two", ("book-table", {"day": "Saturday", "people": 2}))
    add(
        "multi-field",
        FLIGHT,
        "From Berlin to Madrid",
        ("search-flights", {"origin": "Berlin", "destination": "Madrid"}),
    )
    add("multi-field", MEETING, "Monday, 30 minutes", ("schedule-meeting", {"day": "Monday", "minutes": 30}))
    add(
        "multi-field",
        MEETING,
        "Thursday for 45 minutes",
        ("schedule-meeting", {"day": "Thursday", "minutes": 45}),
        held_out=True,
    )
    add(
        "multi-field",
        FLIGHT,
        "Oslo to Rome",
        ("search-flights", {"origin": "Oslo", "destination": "Rome"}),
        held_out=True,
    )

    # answers spread over a correction
    add("correction", WEATHER, "Paris, no wait, Lyon", ("get-weather", {"city": "Lyon"}))
    add("correction", TRIP, "3 days, actually make it 5", ("plan-trip", {"days": 5}))
    add("correction", DEPLOY, "yes - no wait, don't", ("deploy", {"confirmed": False}))
    add("correction", TICKET, "high, sorry, I mean medium", ("open-ticket", {"priority": "medium"}))
    add("correction", WEATHER, "Oslo. Sorry, Bergen", ("get-weather", {"city": "Bergen"}), held_out=True)
    add("correction", TRANSFER, "100, no, 50 dollars", ("transfer", {"amount": 50}), held_out=True)

    # unrelated messages: nothing resumes
    add("unrelated", WEATHER, "hello", None)
    add("unrelated", WEATHER, "thanks!", None)
    add("unrelated", DEPLOY, "what's for lunch today?", None)
    add("unrelated", TICKET, "tell me a joke", None)
    add("unrelated", DEPLOY, "can you also list my open tickets?", None)
    add("unrelated", INVITE, "I'll be in a meeting for an hour", None, held_out=True)
    add("unrelated", TRANSFER, "how's it going?", None, held_out=True)

    # questions back: nothing resumes
    add("question-back", WEATHER, "which cities do you support?", None)
    add("question-back", TARGET, "what's the difference between staging and production?", None)
    add("question-back", DEPLOY, "is it safe to deploy now?", None)
    add("question-back", TRANSFER, "how much is in the account?", None)
    add("question-back", COFFEE, "what sizes do you have?", None, held_out=True)
    add("question-back", INVITE, "who is on the list already?", None, held_out=True)

    # two tools waiting in one thread
    add("two-waiting", (WEATHER, DATE), "Rome", ("get-weather", {"city": "Rome"}))
    add("two-waiting", (WEATHER, DATE), "Friday works", ("reserve-room", {"date": "Friday"}))
    add("two-waiting", (WEATHER, DATE), "hello", None)
    add("two-waiting", (DEPLOY, WEATHER), "no", ("deploy", {"confirmed": False}))
    add("two-waiting", (DEPLOY, WEATHER), "Berlin", ("get-weather", {"city": "Berlin"}))
    add("two-waiting", (DEPLOY, TICKET), "yes, go ahead", ("deploy", {"confirmed": True}), held_out=True)
    add("two-waiting", (TICKET, WEATHER), "low", ("open-ticket", {"priority": "low"}), held_out=True)

    # the replies in English
    add("city-name", WEATHER, "I'm in Paris, France", ("get-weather", {"city": "Paris"}))
    add("confirm-no", DEPLOY, "no, cancel that", ("deploy", {"confirmed": False}))

    # the team's own languages: the same kinds of reply in each (the third of each kind held out)
    for language, replies in LANGUAGES.items():
        for kind, tool, field, items in (
            ("confirm-yes", DEPLOY, "confirmed", [(m, True) for m in replies["yes"]]),
            ("confirm-no", DEPLOY, "confirmed", [(m, False) for m in replies["no"]]),
            ("hedge", DEPLOY, None, [(m, None) for m in replies["hedge"]]),
            ("question-back", DEPLOY, None, [(m, None) for m in replies["question"]]),
            ("city-name", WEATHER, "city", replies["city"]),
            ("city-in-sentence", WEATHER, "city", replies.get("sentence", [])),
            ("number", TRIP, "days", replies["days"]),
            ("unrelated", WEATHER, None, [(m, None) for m in replies["unrelated"]]),
        ):
            for index, (message, value) in enumerate(items):
                expect = None if field is None else (tool.tool, {field: value})
                held = index == 1 if kind in ("hedge", "city-name", "city-in-sentence", "number") else index == 2
                add(kind, tool, message, expect, held_out=held, language=language)

    # languages the bot has no data file for: all held out
    for language, message, expect in OTHER_LANGUAGES:
        tool = WEATHER if expect and "city" in expect[1] else DEPLOY
        add("other-language", tool, message, expect, held_out=True, language=language)
    return cases


def _yes(value: bool) -> tuple[str, dict[str, Any]]:
    return ("deploy", {"confirmed": value})


LANGUAGES: dict[str, dict[str, list]] = {
    "zh-Hans": {
        "yes": ["好的，部署吧", "可以", "没问题，继续"],
        "no": ["不要，取消", "先别部署", "算了吧"],
        "hedge": ["也许吧", "我再想想"],
        "question": ["现在部署安全吗？"],
        "city": [("我在巴黎", "巴黎"), ("北京，谢谢", "北京")],
        "sentence": [("我想知道上海的天气", "上海"), ("帮我查一下广州的天气", "广州")],
        "days": [("三天", 3), ("5天吧", 5)],
        "unrelated": ["我一会儿要开会"],
    },
    "zh-Hant": {
        "yes": ["好的，繼續", "沒問題", "可以，部署吧"],
        "no": ["不要，先別", "取消", "不行"],
        "hedge": ["不確定", "可能吧"],
        "question": ["現在部署安全嗎？"],
        "city": [("台北，謝謝", "台北"), ("我在高雄", "高雄")],
        "sentence": [("我想知道台中的天氣", "台中"), ("幫我查一下台南的天氣", "台南")],
        "days": [("十天", 10), ("七天", 7)],
        "unrelated": ["我等一下要開會"],
    },
    "ja": {
        "yes": ["はい、お願いします", "了解です", "はい、進めてください"],
        "no": ["いいえ、やめてください", "まだです", "キャンセルしてください"],
        "hedge": ["たぶん", "ちょっと考えさせて"],
        "question": ["今デプロイしても大丈夫ですか？"],
        "city": [("東京でお願いします", "東京"), ("大阪です", "大阪")],
        "sentence": [("東京の天気を知りたいです", "東京"), ("札幌の天気を教えてください", "札幌")],
        "days": [("三日間", 3), ("5日でお願いします", 5)],
        "unrelated": ["これから会議です"],
    },
    "ko": {
        "yes": ["네, 진행해 주세요", "좋아요", "네 알겠습니다"],
        "no": ["아니요, 취소해 주세요", "아직요", "하지 마세요"],
        "hedge": ["글쎄요", "잘 모르겠어요"],
        "question": ["지금 배포해도 안전한가요?"],
        "city": [("서울로 해주세요", "서울"), ("부산이요", "부산")],
        "sentence": [("서울 날씨를 알고 싶어요", "서울"), ("부산 날씨 알려 주세요", "부산")],
        "days": [("3일로 해주세요", 3), ("7일이요", 7)],
        "unrelated": ["지금 회의 중이에요"],
    },
    "es": {
        "yes": ["sí, adelante", "claro", "vale, hazlo"],
        "no": ["no, cancélalo", "todavía no", "mejor no"],
        "hedge": ["quizás", "no estoy seguro"],
        "question": ["¿es seguro desplegar ahora?"],
        "city": [("Estoy en Madrid", "Madrid"), ("Barcelona, por favor", "Barcelona")],
        "days": [("diez días", 10), ("3 días", 3)],
        "unrelated": ["estaré en una reunión una hora"],
    },
    "fr": {
        "yes": ["oui, vas-y", "d'accord", "oui, je confirme"],
        "no": ["non, annule", "pas encore", "surtout pas"],
        "hedge": ["peut-être", "je ne sais pas"],
        "question": ["c'est sans risque de déployer maintenant ?"],
        "city": [("Je suis à Montréal", "Montréal"), ("Lyon, merci", "Lyon")],
        "days": [("vingt-cinq jours", 25), ("cinq jours", 5)],
        "unrelated": ["je serai en réunion pendant une heure"],
    },
    "de": {
        "yes": ["ja, mach das", "klar", "ja bitte"],
        "no": ["nein, abbrechen", "noch nicht", "lieber nicht"],
        "hedge": ["vielleicht", "keine Ahnung"],
        "question": ["ist es sicher, jetzt zu deployen?"],
        "city": [("Ich bin in München", "München"), ("Köln, bitte", "Köln")],
        "days": [("fünf Tage", 5), ("zwölf Tage", 12)],
        "unrelated": ["ich bin gleich in einem Meeting"],
    },
    "pt": {
        "yes": ["sim, pode", "claro", "com certeza"],
        "no": ["não, cancela", "ainda não", "melhor não"],
        "hedge": ["talvez", "não tenho certeza"],
        "question": ["é seguro fazer o deploy agora?"],
        "city": [("Estou em Lisboa", "Lisboa"), ("São Paulo, por favor", "São Paulo")],
        "days": [("vinte e dois dias", 22), ("4 dias", 4)],
        "unrelated": ["vou estar numa reunião"],
    },
    "it": {
        "yes": ["sì, procedi", "certo", "va bene"],
        "no": ["no, annulla", "non ancora", "meglio di no"],
        "hedge": ["forse", "non lo so"],
        "question": ["è sicuro fare il deploy adesso?"],
        "city": [("Sono a Milano", "Milano"), ("Roma, grazie", "Roma")],
        "days": [("ventitré giorni", 23), ("sette giorni", 7)],
        "unrelated": ["sarò in riunione per un'ora"],
    },
    "ru": {
        "yes": ["да, давай", "конечно", "да, подтверждаю"],
        "no": ["нет, отмени", "пока нет", "не надо"],
        "hedge": ["может быть", "не знаю"],
        "question": ["сейчас безопасно деплоить?"],
        "city": [("Москва, пожалуйста", "Москва"), ("Я в Казани", "Казани")],
        "days": [("двадцать пять дней", 25), ("три дня", 3)],
        "unrelated": ["я буду на совещании час"],
    },
}
"""Replies in the languages the bot has a data file for (besides the English cases above)."""

OTHER_LANGUAGES: list[tuple[str, str, Any]] = [
    ("pl", "Tak, proszę", _yes(True)),
    ("pl", "Nie, dziękuję", _yes(False)),
    ("tr", "evet", _yes(True)),
    ("tr", "hayır", _yes(False)),
    ("sv", "ja, kör", _yes(True)),
    ("hi", "हाँ", _yes(True)),
    ("hi", "नहीं", _yes(False)),
    ("ar", "نعم", _yes(True)),
    ("ar", "لا، ألغِ ذلك", _yes(False)),
    ("he", "כן", _yes(True)),
    ("he", "לא, תבטל", _yes(False)),
    ("ar", "أنا في الرياض", ("get-weather", {"city": "الرياض"})),
    ("he", "אני בפריז", ("get-weather", {"city": "פריז"})),
    ("hi", "मैं दिल्ली में हूँ", ("get-weather", {"city": "दिल्ली"})),
]
"""Replies in languages without a data file in the ten (ar and he have small ones; pl, tr, sv, hi none)."""


CASES: list[Case] = _cases()
CATEGORIES: list[str] = list(dict.fromkeys(case.category for case in CASES))
LANGUAGE_ORDER: list[str] = list(dict.fromkeys(case.language for case in CASES))

# A dozen cases across the categories, for the test that runs against a real local model.
SMOKE: list[str] = [
    "confirm-yes-01",
    "confirm-no-11",
    "confirm-no-14",
    "confirm-no-15",
    "hedge-24",
    "city-name-28",
    "number-36",
    "enum-47",
    "correction-57",
    "unrelated-63",
    "question-back-72",
    "two-waiting-79",
]
