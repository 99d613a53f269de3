"""The README's Python figures: what a Python call costs over the command line for the demo,
and a 24-run sweep's wall time in-process and on a Dask LocalCluster of two worker processes.

    target/py/bin/python python/benchmarks/overhead.py [--repeat N]

Each time is the median of N repetitions (default 5), in seconds of wall time.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "python" / "tests"))

import grid  # noqa: E402

import kleinrock  # noqa: E402


def median_time(repeat: int, work: Callable[[], object]) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="repetitions per figure")
    repeat = parser.parse_args().repeat
    cli = REPO / "target" / "release" / "kleinrock"
    demo = str(REPO / "scenarios" / "demo.toml")

    def command() -> object:
        return subprocess.run([str(cli), "sweep", demo, "--json", "-q"], check=True,
                              capture_output=True)

    def python_process() -> object:
        code = "import kleinrock; kleinrock.sweep(kleinrock.Scenario.demo(), progress=False)"
        return subprocess.run([sys.executable, "-c", code], check=True, capture_output=True)

    def in_process() -> object:
        return kleinrock.sweep(kleinrock.Scenario.demo(), progress=False)

    print(f"demo, `kleinrock sweep scenarios/demo.toml --json`: {median_time(repeat, command):.3f} s")
    print(f"demo, a Python process importing kleinrock and sweeping it: "
          f"{median_time(repeat, python_process):.3f} s")
    print(f"demo, kleinrock.sweep in a running interpreter: {median_time(repeat, in_process):.3f} s")

    def local() -> object:
        return kleinrock.sweep(grid.scenario(), grid=grid.GRID, seeds=grid.SEEDS, progress=False)

    print(f"24-run sweep, in-process on all cores: {median_time(repeat, local):.3f} s")
    from distributed import Client, LocalCluster

    start = time.perf_counter()
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                      dashboard_address=None) as cluster, Client(cluster) as client:
        print(f"LocalCluster of 2 worker processes started in {time.perf_counter() - start:.3f} s")

        def on_dask() -> object:
            return kleinrock.sweep(grid.scenario(), grid=grid.GRID, seeds=grid.SEEDS,
                                   client=client, progress=False)

        on_dask()
        print(f"24-run sweep, on the LocalCluster: {median_time(repeat, on_dask):.3f} s")


if __name__ == "__main__":
    main()
