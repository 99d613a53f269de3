"""The same numbers as the command line, bit for bit: for the demo and one scenario of each
paper, ``kleinrock.run`` (or ``kleinrock.sweep`` for a file with a grid) against
``kleinrock run --json`` (or ``kleinrock sweep --json``)."""

from __future__ import annotations

import json
import math
from typing import Any

import pandas as pd
import pytest

import kleinrock
from conftest import SCENARIOS, cli

# One scenario of each paper, small enough for the test suite.
SINGLE_RUNS = ["bbr/fig5_bandwidth_step.toml", "siad/fig6_route_change.toml"]
SWEEPS = [
    "examples/buffer_replicates.toml",
    "quic-dc/table3_1bdp.toml",
    "fq-detect/fig2_3_single.toml",
    "ccid5/fig7_tcp_multipath.toml",
]


def flat(d: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """A summary's nested dict with ``outer.inner`` keys, as the DataFrames name columns."""
    out: dict[str, Any] = {}
    for k, v in d.items():
        if isinstance(v, dict):
            out.update(flat(v, f"{prefix}{k}."))
        else:
            out[f"{prefix}{k}"] = v
    return out


def same(ours: Any, theirs: Any) -> bool:
    """Equal values; a missing (None) value is NaN in a DataFrame; floats compared exactly."""
    if theirs is None:
        return ours is None or (isinstance(ours, float) and math.isnan(ours))
    return bool(ours == theirs)


@pytest.mark.parametrize("name", SINGLE_RUNS)
def test_run_matches_the_command_line(name: str) -> None:
    path = SCENARIOS / name
    out = cli("run", str(path), "--json", "--quiet")
    assert out.returncode == 0, out.stderr
    result = kleinrock.run(kleinrock.load(path))
    assert result.to_json() + "\n" == out.stdout
    summary = json.loads(out.stdout)
    for i, flow in enumerate(summary["flows"]):
        row = result.flows.iloc[i]
        for column, value in flat(flow).items():
            assert same(row[column], value), (name, flow["name"], column)
    for i, link in enumerate(summary["links"]):
        for column, value in flat(link).items():
            assert same(result.links.iloc[i][column], value), (name, link["name"], column)


def check_sweep_rows(df: pd.DataFrame, runs: list[dict[str, Any]], per_point: int = 1) -> None:
    """Every (run, flow) row of ``df`` holds exactly the CLI summary's numbers, and the index
    of its grid point (``per_point`` runs, one per seed, make a point)."""
    rows = [(i, r, f) for i, r in enumerate(runs) for f in r["flows"]]
    assert len(df) == len(rows)
    for (i, run, flow), (_, row) in zip(rows, df.iterrows()):
        assert row["point"] == i // per_point
        assert row["seed"] == run["seed"]
        assert row["flow"] == flow["name"]
        assert same(row["jain_index"], run["jain_index"])
        for path, value in run["point"]:
            assert str(row[path]) == value or row[path] == float(value)
        for column, value in flat(flow).items():
            if column != "name":
                assert same(row[column], value), (run["point"], flow["name"], column)
        for link in run["links"]:
            for metric, value in link.items():
                if metric != "name":
                    assert same(row[f"{link['name']}.{metric}"], value)


@pytest.mark.parametrize("name", SWEEPS)
def test_sweep_matches_the_command_line(name: str) -> None:
    path = SCENARIOS / name
    out = cli("sweep", str(path), "--json", "--quiet")
    assert out.returncode == 0, out.stderr
    report = json.loads(out.stdout)
    runs = report["runs"] if isinstance(report, dict) else report
    per_point = len(report["seeds"]) if isinstance(report, dict) else 1
    check_sweep_rows(kleinrock.sweep(kleinrock.load(path), progress=False), runs, per_point)


def test_demo_matches_the_command_line() -> None:
    out = cli("sweep", str(SCENARIOS / "demo.toml"), "--json", "--quiet")
    assert out.returncode == 0, out.stderr
    df = kleinrock.sweep(kleinrock.Scenario.demo(), progress=False)
    check_sweep_rows(df, json.loads(out.stdout))
    assert list(df["flows.0.cc"]) == ["newreno", "cubic"]


def test_overrides_match_the_command_line() -> None:
    path = SCENARIOS / "examples" / "reverse_traffic.toml"
    out = cli("run", str(path), "--json", "--set", "flows.0.cc=newreno", "--set",
              "links.0.buffer=4bdp")
    assert out.returncode == 0, out.stderr
    scenario = kleinrock.load(path).set("flows.0.cc", "newreno").set("links.0.buffer", "4bdp")
    assert kleinrock.run(scenario).to_json() + "\n" == out.stdout


def test_the_same_seed_gives_the_same_bytes() -> None:
    scenario = kleinrock.load(SCENARIOS / "bbr" / "fig5_bandwidth_step.toml")
    scenario.set("trace_interval", "100ms")
    first, second = kleinrock.run(scenario), kleinrock.run(scenario)
    assert first.to_json() == second.to_json()
    flow = str(first.flows["name"][0])
    pd.testing.assert_frame_equal(first.trace(flow), second.trace(flow))
