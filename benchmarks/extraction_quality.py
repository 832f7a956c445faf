"""How well auto-resume reads a user's answer, measured against a real OpenAI-compatible model.

Each labelled case of `extraction_cases.py` (a question a tool asked with `suspend()`, the user's next
message, what it means) goes through the project's own extraction (`bot.agent._autoresume`), the very
request the bot sends, to the endpoint given. Every case is scored:

- right:     resumed the right call with the right values, or kept waiting when it had to;
- safe-wait: kept waiting although the message answered (the user is asked again);
- unsafe:    resumed with a wrong value, resumed the wrong call, or resumed on a message that does
             not answer. "unsafe refusal" (a no read as a yes) and "unrelated resume" are counted
             apart: both must be 0.

    python benchmarks/extraction_quality.py --base-url http://127.0.0.1:8089/v1
    python benchmarks/extraction_quality.py --base-url ... --show-request deploy --json out.json
    python benchmarks/extraction_quality.py --reader scripted      # the project alone, no model

`--reader scripted` answers every request (the extraction and, where the bot asks one, the second
reading) the way a reader that understands every case would, through the scripted OpenAI-compatible
server of the tests and the real `openai` client: what is left wrong is the project's own doing.
`--reader yes-sayer` reads every value right but says "yes" to every yes/no question (the failure
seen in a small multilingual model): the hard rules must still hold.

The tool-call ids of the waiting calls are random on every run, as a real model's are.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import uuid
from collections import Counter
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import openai  # noqa: E402
from extraction_cases import CASES, CATEGORIES, LANGUAGE_ORDER, SMOKE, Case  # noqa: E402

from bot.agent import _autoresume  # noqa: E402
from memory import StoredToolCall  # noqa: E402


@dataclass
class Outcome:
    case: Case
    got: tuple[str, Any] | None
    """(tool, resume data) resumed, or None when the calls keep waiting."""
    verdict: str = ""
    """right, safe-wait or unsafe."""
    kind: str = ""
    """For an unsafe outcome: unsafe-refusal, unrelated-resume, wrong-call or wrong-value."""


def parked_calls(case: Case) -> list[StoredToolCall]:
    now = datetime.now(UTC)
    return [
        StoredToolCall(
            run_id=uuid.uuid4().hex,
            tool_call_id=f"call_{uuid.uuid4().hex[:24]}",
            agent_id="bench",
            thread_id="bench-thread",
            step=0,
            position=index,
            tool_name=waiting.tool,
            args=waiting.args,
            state="suspended",
            requires_approval=False,
            suspend_payload=waiting.asked,
            resume_schema=waiting.resume_schema,
            suspended_at=now,
        )
        for index, waiting in enumerate(case.waiting)
    ]


def same_value(expected: Any, got: Any) -> bool:
    if isinstance(expected, tuple):
        return any(same_value(option, got) for option in expected)
    if isinstance(expected, bool) or isinstance(got, bool):
        return expected is got
    if isinstance(expected, int | float) and isinstance(got, int | float):
        return float(expected) == float(got)
    if isinstance(expected, str) and isinstance(got, str):
        return " ".join(expected.lower().split()) == " ".join(got.lower().split())
    return expected == got


def score(case: Case, got: tuple[str, Any] | None) -> Outcome:
    outcome = Outcome(case, got)
    if got is None:
        outcome.verdict = "right" if case.expect is None else "safe-wait"
        return outcome
    tool, data = got
    if case.expect is None:
        outcome.verdict, outcome.kind = "unsafe", "unrelated-resume"
        return outcome
    want_tool, want = case.expect
    right = (
        tool == want_tool
        and isinstance(data, dict)
        and set(data) == set(want)
        and all(same_value(v, data[k]) for k, v in want.items())
    )
    if right:
        outcome.verdict = "right"
        return outcome
    outcome.verdict = "unsafe"
    said_no = any(v is False for v in want.values())
    read_yes = isinstance(data, dict) and any(v is True for v in data.values())
    if said_no and read_yes:
        outcome.kind = "unsafe-refusal"
    elif tool != want_tool:
        outcome.kind = "wrong-call"
    else:
        outcome.kind = "wrong-value"
    return outcome


async def extract(agent: Any, case: Case, *, timeout: float) -> tuple[str, Any] | None:
    """The bot's own extraction of one case: which waiting call resumes, with what."""
    parked = parked_calls(case)
    reading = await _autoresume.find_answer(agent.model_client, agent.model, parked, case.message, timeout=timeout)
    found = reading.answer
    if found is None:
        return None
    return found.call.tool_name, found.resume_data


def model_agent(base_url: str, model: str) -> Any:
    """What the extraction needs of an agent: its model client and model name (no memory)."""
    client = openai.AsyncOpenAI(base_url=base_url, api_key="not-needed", max_retries=0)
    return SimpleNamespace(model_client=client, model=model, memory=None)


def _first(value: Any) -> Any:
    return value[0] if isinstance(value, tuple) else value


def yes_sayer_reading(case: Case, body: dict[str, Any]) -> dict[str, Any]:
    """A reader with the failure the issue saw in Gemma 3 270M: every value right, except that it answers
    "yes" to every yes/no question (refusals included, and the second reading's "called off?")."""

    def yes(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: yes(v) for k, v in value.items()}
        return "yes" if value in ("no", "unclear") else value

    return yes(correct_reading(case, body))


def correct_reading(case: Case, body: dict[str, Any]) -> dict[str, Any]:
    """What a reader that understands the case answers to the request `body` the bot sent: the
    extraction (the fields of the call the reply answers; yes/no as the words "yes"/"no"/"unclear"),
    or the second reading ("should it be called off?")."""
    schema = body["response_format"].get("json_schema", {}).get("schema") or {}
    properties = schema.get("properties", {})
    call_off = getattr(_autoresume, "CALL_OFF_FIELD", "call_off")  # (absent before issue 16)
    if call_off in properties:
        values = list(case.expect[1].values()) if case.expect else []
        said = values[0] if len(values) == 1 and isinstance(values[0], bool) else None
        return {call_off: "unclear" if said is None else ("yes" if said is False else "no")}

    def fields(tool: str, field_schemas: dict[str, Any]) -> dict[str, Any]:
        want = case.expect[1] if case.expect and case.expect[0] == tool else {}
        out = {}
        for name, field_schema in field_schemas.items():
            value = _first(want.get(name))
            if field_schema.get("enum") == ["yes", "no", "unclear"]:
                value = "unclear" if value is None else ("yes" if value else "no")
            out[name] = value
        return out

    if len(case.waiting) == 1:
        return fields(case.waiting[0].tool, properties)
    return {tool: fields(tool, sub.get("properties", {})) for tool, sub in properties.items()}


class ScriptedReader:
    """The scripted OpenAI-compatible server of the tests, answering each case correctly (or, as the
    `yes-sayer`, with a yes to every yes/no)."""

    def __init__(self, reading=None) -> None:
        from tests.support.scripted_model import ScriptedModel

        self.reading = reading or correct_reading
        self.server = ScriptedModel().start()
        self.agent = model_agent(self.server.base_url, "scripted-reader")

    def prepare(self, case: Case) -> None:
        from tests.support.scripted_model import structured

        self.server.structured.clear()
        self.server.structured.push(*(lambda body: structured(self.reading(case, body)) for _ in range(2)))

    def close(self) -> None:
        self.server.stop()


async def run(
    agent: Any, cases: list[Case], *, timeout: float, progress: bool = False, reader: ScriptedReader | None = None
) -> list[Outcome]:
    outcomes = []
    for case in cases:
        if reader is not None:
            reader.prepare(case)
        outcomes.append(score(case, await extract(agent, case, timeout=timeout)))
        if progress:
            print(f"  {case.id}: {outcomes[-1].verdict} {outcomes[-1].got}", file=sys.stderr, flush=True)
    return outcomes


def _row(name: str, group: list[Outcome]) -> str:
    counts = Counter(o.verdict for o in group)
    right = counts["right"]
    return (
        f"| {name} | {len(group)} | {right} ({100 * right / len(group):.0f}%) | {counts['safe-wait']} "
        f"| {counts['unsafe']} |"
    )


def _cells(group: list[Outcome]) -> str:
    if not group:
        return "0 | - | - | -"
    counts = Counter(o.verdict for o in group)
    right = counts["right"]
    return f"{len(group)} | {right} ({100 * right / len(group):.0f}%) | {counts['safe-wait']} | {counts['unsafe']}"


def table(outcomes: list[Outcome]) -> str:
    lines = [
        "| category | cases | right | safe-wait | unsafe |",
        "|---|---|---|---|---|",
    ]
    groups = [(c, [o for o in outcomes if o.case.category == c]) for c in CATEGORIES]
    groups += [
        ("**all**", outcomes),
        ("tuned on", [o for o in outcomes if not o.case.held_out]),
        ("held out", [o for o in outcomes if o.case.held_out]),
    ]
    lines += [_row(name, group) for name, group in groups if group]
    return "\n".join(lines)


def language_table(outcomes: list[Outcome]) -> str:
    """One row per language, tuned-on and held-out cases apart."""
    lines = [
        "| language | cases | right | safe-wait | unsafe | held out: cases | right | safe-wait | unsafe |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    known = [code for code in LANGUAGE_ORDER if any(o.case.language == code and not o.case.held_out for o in outcomes)]
    others = [code for code in LANGUAGE_ORDER if code not in known]
    for name, codes in [*((code, [code]) for code in known), ("other languages (held out)", others)]:
        group = [o for o in outcomes if o.case.language in codes]
        if not group:
            continue
        tuned = [o for o in group if not o.case.held_out]
        held = [o for o in group if o.case.held_out]
        lines.append(f"| {name} | {_cells(tuned)} | {_cells(held)} |")
    return "\n".join(lines)


def hard_rules(outcomes: list[Outcome]) -> dict[str, int]:
    kinds = Counter(o.kind for o in outcomes if o.verdict == "unsafe")
    return {"unsafe refusals": kinds["unsafe-refusal"], "unrelated resumes": kinds["unrelated-resume"]}


def confusions(outcomes: list[Outcome], limit: int = 12) -> str:
    order = {"unsafe": 0, "safe-wait": 1}
    wrong = sorted((o for o in outcomes if o.verdict != "right"), key=lambda o: (order[o.verdict], o.case.id))
    lines = ["| case | message | expected | got | verdict |", "|---|---|---|---|---|"]
    for o in wrong[:limit]:
        expected = (
            "wait"
            if o.case.expect is None
            else f"{o.case.expect[0]} {json.dumps(o.case.expect[1], ensure_ascii=False)}"
        )
        got = "wait" if o.got is None else f"{o.got[0]} {json.dumps(o.got[1], ensure_ascii=False)}"
        verdict = o.verdict + (f" ({o.kind})" if o.kind else "")
        lines.append(f"| {o.case.id} | {o.case.message} | {expected} | {got} | {verdict} |")
    return "\n".join(lines)


def request_body(case: Case) -> dict[str, Any]:
    """The request the bot sends for `case`, as JSON (with the fixed ids of a test, not random ones)."""
    parked = parked_calls(case)
    for index, call in enumerate(parked):
        call.tool_call_id = f"call_{index}"
    messages, schema = _autoresume.extraction_request(parked, case.message)
    return {"messages": messages, "temperature": 0, "response_format": {"type": "json_schema", "schema": schema}}


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--base-url", default="http://127.0.0.1:8089/v1", help="OpenAI-compatible endpoint")
    parser.add_argument("--model", default="openai/local", help="model name sent to the endpoint")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds per request")
    parser.add_argument("--only", help="comma-separated case ids or categories")
    parser.add_argument("--held-out", action="store_true", help="only the held-out cases")
    parser.add_argument("--smoke", action="store_true", help="only the dozen cases of the real-model test")
    parser.add_argument("--repeat", type=int, default=1, help="run every case N times; report answers that change")
    parser.add_argument("--show-request", metavar="CASE", help="print the request body of a case id and exit")
    parser.add_argument("--json", type=Path, help="write every outcome to this file")
    parser.add_argument(
        "--reader",
        choices=["model", "scripted", "yes-sayer"],
        default="model",
        help="the endpoint's model, the scripted reader (reads every case right), or one that says yes to every yes/no",
    )
    parser.add_argument("--language", help="comma-separated languages (en, zh-Hans, ..., or other ones)")
    args = parser.parse_args()

    cases = CASES
    if args.only:
        wanted = set(args.only.split(","))
        cases = [c for c in cases if c.id in wanted or c.category in wanted]
    if args.held_out:
        cases = [c for c in cases if c.held_out]
    if args.smoke:
        cases = [c for c in cases if c.id in SMOKE]
    if args.language:
        cases = [c for c in cases if c.language in set(args.language.split(","))]
    if args.show_request:
        case = next(c for c in CASES if c.id == args.show_request)
        print(json.dumps(request_body(case), indent=2, ensure_ascii=False))
        return 0

    readings = {"scripted": correct_reading, "yes-sayer": yes_sayer_reading}
    reader = ScriptedReader(readings[args.reader]) if args.reader in readings else None
    agent = reader.agent if reader else model_agent(args.base_url, args.model)
    try:
        runs = [
            await run(agent, cases, timeout=args.timeout, progress=True, reader=reader)
            for _ in range(max(1, args.repeat))
        ]
    finally:
        if reader:
            reader.close()
    outcomes = runs[0]
    against = f"the {args.reader} reader" if reader else f"{args.base_url} ({args.model})"
    print(f"{len(outcomes)} cases against {against}\n")
    print(table(outcomes))
    print()
    print(language_table(outcomes))
    print()
    for rule, count in hard_rules(outcomes).items():
        print(f"{rule}: {count}")
    if len(runs) > 1:
        changed = [o.case.id for i, o in enumerate(outcomes) if any(r[i].got != o.got for r in runs[1:])]
        print(f"answers that changed between {len(runs)} runs: {len(changed)} {changed}")
    print("\nworst confusions:\n")
    print(confusions(outcomes))
    if args.json:
        args.json.write_text(
            json.dumps(
                [
                    {"case": o.case.id, "message": o.case.message, "got": o.got, "verdict": o.verdict, "kind": o.kind}
                    for o in outcomes
                ],
                indent=1,
                ensure_ascii=False,
            )
        )
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
