"""A sweep's cache: stopped half way and rerun, a sweep computes only the missing runs and
gives the DataFrame of an uninterrupted one."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import grid
import kleinrock


class Stop(Exception):
    """Stands for Ctrl-C half way through."""


def test_an_interrupted_sweep_resumes_with_only_the_missing_runs(tmp_path: Path) -> None:
    cache = tmp_path / "cache"

    def stop_half_way(done: int, total: int) -> None:
        if done == total // 2:
            raise Stop

    with pytest.raises(Stop):
        kleinrock.sweep(grid.scenario(), grid=grid.GRID, seeds=grid.SEEDS, cache=cache,
                        progress=stop_half_way, workers=2)
    kept = list(cache.glob("*.json"))
    # Two threads: at most the two runs under way finish after the twelfth.
    assert 12 <= len(kept) <= 14, "the finished runs are kept, and no run was started after"
    assert not list(cache.glob("*.tmp")), "no file is left half-written"

    resumed = kleinrock.sweep(grid.scenario(), grid=grid.GRID, seeds=grid.SEEDS, cache=cache,
                              progress=False)
    assert resumed.attrs["cached"] == len(kept)
    assert resumed.attrs["computed"] == 24 - len(kept)
    whole = kleinrock.sweep(grid.scenario(), grid=grid.GRID, seeds=grid.SEEDS, progress=False)
    pd.testing.assert_frame_equal(resumed, whole, check_exact=True)

    again = kleinrock.sweep(grid.scenario(), grid=grid.GRID, seeds=grid.SEEDS, cache=cache,
                            progress=False)
    assert again.attrs["computed"] == 0
    pd.testing.assert_frame_equal(again, whole, check_exact=True)


def test_more_seeds_reuse_the_runs_already_cached(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    kleinrock.sweep(grid.scenario(), grid={"flows.0.cc": ["cubic"]}, seeds=[1, 2], cache=cache,
                    progress=False)
    df = kleinrock.sweep(grid.scenario(), grid={"flows.0.cc": ["cubic", "bbr"]},
                         seeds=[1, 2, 3], cache=cache, progress=False)
    assert (df.attrs["cached"], df.attrs["computed"]) == (2, 4)
    whole = kleinrock.sweep(grid.scenario(), grid={"flows.0.cc": ["cubic", "bbr"]},
                            seeds=[1, 2, 3], progress=False)
    pd.testing.assert_frame_equal(df, whole, check_exact=True)


def test_a_changed_scenario_misses_the_cache(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    kleinrock.sweep(grid.scenario(), grid={"flows.0.cc": ["cubic"]}, cache=cache, progress=False)
    changed = grid.scenario().set("links.0.delay", "30ms")
    df = kleinrock.sweep(changed, grid={"flows.0.cc": ["cubic"]}, cache=cache, progress=False)
    assert df.attrs["computed"] == 1


def test_a_damaged_cache_entry_is_recomputed(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    first = kleinrock.sweep(grid.scenario(), cache=cache, progress=False)
    [entry] = cache.glob("*.json")
    entry.write_text('{"scenario": ')
    again = kleinrock.sweep(grid.scenario(), cache=cache, progress=False)
    assert again.attrs["computed"] == 1
    pd.testing.assert_frame_equal(again, first, check_exact=True)
