"""Sweeps on a Dask LocalCluster of two worker processes on loopback: the same DataFrame as
the in-process sweep, also when a worker is killed in the middle."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import pandas as pd
import pytest
from distributed import Client, LocalCluster, get_task_stream

import grid
import kleinrock


@pytest.fixture(scope="module")
def client() -> Iterator[Client]:
    with LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address=None,
    ) as cluster, Client(cluster) as c:
        yield c


@pytest.fixture(scope="module")
def local() -> pd.DataFrame:
    return kleinrock.sweep(grid.scenario(), grid=grid.GRID, seeds=grid.SEEDS, progress=False)


def tasks_run(stream: list[dict[str, object]]) -> int:
    """How many runs the cluster's workers executed."""
    return sum(1 for t in stream if str(t["key"]).startswith("_run_spec"))


def test_a_sweep_on_the_cluster_is_the_local_sweep(client: Client, local: pd.DataFrame) -> None:
    with get_task_stream(client) as stream:
        df = kleinrock.sweep(
            grid.scenario(), grid=grid.GRID, seeds=grid.SEEDS, client=client, progress=False
        )
    assert tasks_run(stream.data) == 24, "every run ran on the cluster, once"
    assert len(local) == 24
    pd.testing.assert_frame_equal(df, local, check_exact=True)


def test_a_worker_killed_mid_sweep_is_survived(client: Client, local: pd.DataFrame) -> None:
    pids: dict[str, int] = client.run(os.getpid)
    victim = sorted(pids.values())[0]
    seen: list[int] = []

    def progress(done: int, total: int) -> None:
        seen.append(done)
        if done == 4:
            os.kill(victim, signal.SIGKILL)

    df = kleinrock.sweep(
        grid.scenario(), grid=grid.GRID, seeds=grid.SEEDS, client=client, progress=progress
    )
    assert seen == list(range(25)), "each run reported once, none lost or repeated"
    # The runs under way or queued on the killed worker ran again elsewhere; the task stream
    # reaches the client from the scheduler, which only hears of a task's end.
    assert df.attrs["computed"] == 24
    pd.testing.assert_frame_equal(df, local, check_exact=True)
    after: dict[str, int] = client.run(os.getpid)
    assert victim not in after.values(), "the killed worker was really gone"
