"""Statements per plain Slack turn, and where they come from (issue 19).

The bot of the Slack tests (`tests/slack/harness.py`: the real Bolt app, the demo agent, the Slack Web
API emulation, the scripted OpenAI-compatible model) in this process, on SQLite or PostgreSQL; plain
mentions ("hello" -> one model answer) one after the other, each until its stream is stopped; every
statement is counted by SQLAlchemy's `before_cursor_execute`, and grouped by what it does (its verb and
table) and by the transaction it ran in (`begin` ... `commit`/`rollback`, or a read outside one).

    python benchmarks/turn_statements.py                  # 10 turns after 2 warm-ups, SQLite
    python benchmarks/turn_statements.py --database postgres
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import re
import sys
import tempfile
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sqlalchemy import event  # noqa: E402

from bot.slack_emulator import SlackEmulator  # noqa: E402
from tests.slack.harness import running_bot  # noqa: E402
from tests.support.scripted_model import ScriptedModel, reply  # noqa: E402
from tests.support.slack import slack_workspace  # noqa: E402


def what(statement: str) -> str:
    words = " ".join(statement.split())
    verb = words.split(" ", 1)[0].upper()
    table = re.search(r"\b(?:FROM|INTO|UPDATE)\s+\"?(\w+)", words, re.IGNORECASE)
    return f"{verb} {table.group(1) if table else words[:40]}"


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--database", choices=["sqlite", "postgres"], default="sqlite")
    parser.add_argument("--turns", type=int, default=10)
    parser.add_argument("--warmups", type=int, default=2)
    args = parser.parse_args()
    admin = name = None
    with ScriptedModel() as model, tempfile.TemporaryDirectory(prefix="turns-") as directory:
        os.environ["OPENAI_BASE_URL"], os.environ["OPENAI_API_KEY"] = model.base_url, "bench"
        if args.database == "sqlite":
            url = f"sqlite+aiosqlite:///{directory}/turns.db"
        else:
            import asyncpg

            name = f"bot_turns_{uuid.uuid4().hex[:10]}"
            admin = await asyncpg.connect(host="127.0.0.1", user="postgres", database="postgres")
            await admin.execute(f'CREATE DATABASE "{name}"')
            url = f"postgresql+asyncpg://postgres@127.0.0.1:5432/{name}"
        try:
            async with SlackEmulator(slack_workspace()) as slack, running_bot(database_url=url, slack=slack) as bot:
                counting = False
                statements: collections.Counter[str] = collections.Counter()
                transactions = collections.Counter()

                def on_statement(_connection, _cursor, statement, *_rest) -> None:
                    if counting:
                        statements[what(statement)] += 1

                def on_begin(_connection) -> None:
                    if counting:
                        transactions["begin"] += 1

                engine = bot.storage.engine.sync_engine
                event.listen(engine, "before_cursor_execute", on_statement)
                event.listen(engine, "begin", on_begin)
                for turn in range(args.warmups + args.turns):
                    counting = turn >= args.warmups
                    model.chat.push(reply(f"Hello! 你好 {turn}"))
                    await bot.mention(f"hello {turn}", ts=f"1700000{turn:03d}.000100")
                    await slack.wait_for("chat.stopStream", count=turn + 1)
                    await slack.settle()
                await asyncio.sleep(0)
        finally:
            if admin is not None:
                await admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
                await admin.close()
    total = sum(statements.values())
    print(
        f"{args.database}: {total / args.turns:.1f} statements and {transactions['begin'] / args.turns:.1f} "
        f"transactions (begin) per plain turn, {args.turns} turns; load {os.getloadavg()[0]:.1f}"
    )
    print("| statement | per turn |\n| --- | ---: |")
    for key, count in statements.most_common():
        print(f"| `{key}` | {count / args.turns:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
