"""The long soak (issue 41): two `serve` replicas on a PostgreSQL server of their own behind a random load
balancer, people mentioning, approving and declining, while faults strike; then the checker of the
invariants (`tests/support/soak.py`). The short, fixed-seed run is `tests/soak/test_soak.py`, in CI.

    python benchmarks/soak.py                          # 90 s, all fault kinds, a random seed (printed)
    python benchmarks/soak.py --seconds 300 --seed 7 --runs 3
    python benchmarks/soak.py --faults pg_fast,pg_immediate,slack_5xx

Exits 1 when a run found a problem. Each run's replica logs stay in the folder printed.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.soak import FAULTS, SoakConfig, soak  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seconds", type=float, default=90.0)
    parser.add_argument("--seed", type=int, default=None, help="the first run's seed (default: random)")
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--people", type=int, default=5)
    parser.add_argument("--faults", default=",".join(FAULTS), help=f"comma-separated, of {', '.join(FAULTS)}")
    parser.add_argument("--fault-every", default="3,6", help="seconds between two faults: LOW,HIGH (default 3,6)")
    args = parser.parse_args()
    first = args.seed if args.seed is not None else random.randrange(1_000_000)
    faults = tuple(kind for kind in args.faults.split(",") if kind)
    failed = 0
    for run in range(args.runs):
        seed = first + run
        folder = Path(tempfile.mkdtemp(prefix=f"soak-{seed}-"))
        print(f"run {run + 1}/{args.runs}: seed {seed}, {args.seconds:.0f} s, logs in {folder}", flush=True)
        started = time.monotonic()
        low, high = (float(part) for part in args.fault_every.split(","))
        config = SoakConfig(seconds=args.seconds, seed=seed, people=args.people, faults=faults, fault_every=(low, high))
        findings = asyncio.run(soak(config, folder))
        print(findings, flush=True)
        print(f"  {time.monotonic() - started:.0f} s; {'FAILED' if findings.problems else 'passed'}", flush=True)
        failed += bool(findings.problems)
    print(f"{args.runs - failed} of {args.runs} runs passed (seeds {first}..{first + args.runs - 1})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
