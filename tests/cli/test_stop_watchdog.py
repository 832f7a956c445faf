"""A stop whose cleanup never ends (a task that swallows its cancellation): `bot.stopping.run_until_stopped`
reports what is at work once the stop is slow, and at its bound prints every thread's stack and exits 0;
a stop bounded under the report (`dev`'s 2 s) exits at its bound without a word. Real processes."""

from __future__ import annotations

import asyncio
import sys

from tests.support.processes import ROOT

STUBBORN = """
import asyncio, logging, os, signal, sys
from bot.stopping import run_until_stopped

logging.basicConfig(level=logging.INFO, format="%(levelname)s %(name)s: %(message)s")

async def deaf_to_cancellation():
    while True:
        try:
            await asyncio.sleep(10)
        except asyncio.CancelledError:
            pass

async def work():
    asyncio.get_running_loop().call_later(0.2, os.kill, os.getpid(), signal.SIGTERM)
    await deaf_to_cancellation()

run_until_stopped(work(), hard_deadline=float(sys.argv[1]), slow_after=0.5)
"""


async def _stop_of(hard_deadline: float) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-c", STUBBORN, str(hard_deadline), cwd=ROOT,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    _, err = await asyncio.wait_for(process.communicate(), 30)
    return process.returncode, err.decode()


async def test_a_stuck_stop_says_what_it_waits_for_then_shows_every_thread_and_exits():
    code, err = await _stop_of(1.5)
    assert code == 0
    assert "still stopping after 0.5s; at work:" in err, err
    assert "work -> deaf_to_cancellation -> sleep" in err, err
    assert "the stop took more than 1.5s: exiting anyway" in err, err
    assert "in run_until_stopped" in err, err  # the main thread's stack, as faulthandler prints it


async def test_a_stop_bounded_under_the_report_ends_without_a_word():
    code, err = await _stop_of(0.4)
    assert (code, err) == (0, "")
