"""`StallWatch` tells a process that it stalled (its loop did not run) for longer than its gap, so that it
reads the thread before posting what another replica may have posted meanwhile (`lost_answers`)."""

from __future__ import annotations

import asyncio
import time

from bot.slack.stall_watch import StallWatch


async def test_a_loop_held_past_the_gap_is_a_stall_and_a_busy_loop_is_not():
    watch = StallWatch(gap=0.3, every=0.05)
    since = time.monotonic()
    watch.start()
    await asyncio.sleep(0.2)
    assert not watch.stalled_since(since)  # the loop ran all along

    time.sleep(0.5)  # on purpose: nothing on this loop runs, as under SIGSTOP
    assert watch.stalled_since(since)  # waking: the watch has not ticked yet
    await asyncio.sleep(0.2)
    assert watch.stalled_since(since)  # the watch noted it
    assert not watch.stalled_since(time.monotonic())  # nothing since
