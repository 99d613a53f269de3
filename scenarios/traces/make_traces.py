#!/usr/bin/env python3
"""Writes the two delivery traces kleinrock ships, in mahimahi's format (one delivery
opportunity of a 1504-byte packet per line, its time in whole milliseconds; the trace repeats
with a period of its last time). Deterministic: rerunning rewrites the same bytes.

step.trace  12.03 Mbit/s (one opportunity per ms) for 5 s, then 4.01 Mbit/s (one per 3 ms,
            from 5.002 s) for 5 s; period 10 s.
lte.trace   an LTE-like variable link, 30 s: the capacity is redrawn every 200 ms as a
            random walk of its logarithm between 1 and 40 Mbit/s, with outages of 50 to
            300 ms (about one every 6 s); within each 1 ms transmission interval the
            opportunities due so far go out together, as a cellular scheduler grants them.
            Mean 7.0 Mbit/s.

Usage: python3 make_traces.py   (writes both files next to this script)
"""

import math
import random
from pathlib import Path

HERE = Path(__file__).resolve().parent
OPPORTUNITY_BITS = 1504 * 8


def step():
    fast = list(range(1, 5001))
    slow = list(range(5002, 10001, 3))
    return fast + slow


def lte(seconds=30, seed=2026):
    rng = random.Random(seed)
    times, credit, log_rate = [], 0.0, math.log(12.0)
    outage_left = 0
    for ms in range(1, seconds * 1000 + 1):
        if ms % 200 == 1:
            log_rate = min(math.log(40.0), max(math.log(1.0), log_rate + rng.gauss(0.0, 0.35)))
            if outage_left == 0 and rng.random() < 0.2 / 6:
                outage_left = rng.randint(50, 300)
        if outage_left > 0:
            outage_left -= 1
            continue
        credit += math.exp(log_rate) * 1e6 / 1000 / OPPORTUNITY_BITS
        while credit >= 1.0:
            times.append(ms)
            credit -= 1.0
    if times[-1] != seconds * 1000:
        times.append(seconds * 1000)  # the period: the trace lasts the full 30 s
    return times


def write(name, times):
    (HERE / name).write_text("".join(f"{t}\n" for t in times))
    period = times[-1] / 1000
    mbps = len(times) * OPPORTUNITY_BITS / period / 1e6
    print(f"{name}: {len(times)} opportunities over {period:g} s, mean {mbps:.2f} Mbit/s")


if __name__ == "__main__":
    write("step.trace", step())
    write("lte.trace", lte())
