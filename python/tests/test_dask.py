"""Sweeps on a Dask LocalCluster of two worker processes on loopback: the same DataFrame as
the in-process sweep, also when a worker is killed in the middle."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import pandas as pd
import pytest
from distributed import Client, LocalCluster

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


def test_a_sweep_on_the_cluster_is_the_local_sweep(client: Client, local: pd.DataFrame) -> None:
    df = kleinrock.sweep(
        grid.scenario(), grid=grid.GRID, seeds=grid.SEEDS, client=client, progress=False
    )
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
    assert df.attrs["computed"] == 24
    pd.testing.assert_frame_equal(df, local, check_exact=True)
    after: dict[str, int] = client.run(os.getpid)
    assert victim not in after.values(), "the killed worker was really gone"
