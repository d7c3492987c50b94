"""How long `zotsync --version` and `zotsync --help` take, start to exit, as a user's shell runs them.

    python bench/bench_startup.py [--runs 15] [--target 0.15]

Runs the installed console script (the `zotsync` beside this Python, else `python -m zotsync`) `--runs`
times per command, prints the median and the fastest in seconds, and exits 1 when a median misses the
target (0.15 s). Start-up is mostly imports: cli.py imports the use cases inside the commands, so neither
command loads pandas, pyzotero or the store. The machine is shared: take the median, not one run.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path


def entry_point() -> list[str]:
    script = Path(sys.executable).with_name("zotsync")
    if script.exists():
        return [str(script)]
    found = shutil.which("zotsync")
    return [found] if found else [sys.executable, "-m", "zotsync"]


def timed(command: list[str]) -> float:
    started = time.perf_counter()
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--target", type=float, default=0.15, help="seconds, for each median")
    args = parser.parse_args()
    base = entry_point()
    timed([*base, "--version"])  # warm the file cache once; not counted
    missed = False
    for flag in ("--version", "--help"):
        times = [timed([*base, flag]) for _ in range(args.runs)]
        median = statistics.median(times)
        ok = median < args.target
        missed |= not ok
        print(
            f"zotsync {flag:<9}  median {median:.3f} s  fastest {min(times):.3f} s  "
            f"({args.runs} runs; target < {args.target:.2f} s: {'ok' if ok else 'MISSED'})"
        )
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
