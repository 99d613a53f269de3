"""The result of a run as DataFrames, its traces and distributions, its files and HTML
report; scenarios from a dict; the controllers."""

from __future__ import annotations

import csv
import io
import json
import math
from pathlib import Path

import pytest

import kleinrock
from conftest import SCENARIOS

MULTIPATH = SCENARIOS / "ccid5" / "fig7_tcp_multipath.toml"


@pytest.fixture(scope="module")
def result() -> kleinrock.RunResult:
    scenario = kleinrock.load(SCENARIOS / "examples" / "reverse_traffic.toml")
    return kleinrock.run(scenario.set("trace_interval", "50ms"))


def test_summary_frames_have_a_row_per_flow_and_link(result: kleinrock.RunResult) -> None:
    assert list(result.flows["name"]) == [f["name"] for f in result.summary["flows"]]
    assert list(result.links["name"]) == [link["name"] for link in result.summary["links"]]
    assert result.flows["goodput_bps"].dtype.kind == "f"
    assert result.jain_index == result.summary["jain_index"]
    assert result.tunnels.empty


def test_traces_are_the_csv_files_exactly(result: kleinrock.RunResult, tmp_path: Path) -> None:
    out = tmp_path / "out"
    result.save(out)
    assert json.loads((out / "summary.json").read_text()) == result.summary
    assert (out / "report.html").is_file()
    checks = [(result.trace("forward"), out / "flows" / "forward.csv"),
              (result.link_trace("left-to-right"), out / "links" / "left-to-right.csv"),
              (result.rtt_cdf("forward"), out / "rtt_cdf" / "forward.csv"),
              (result.latency_cdf("backward"), out / "latency_cdf" / "backward.csv")]
    for frame, path in checks:
        rows = list(csv.reader(io.StringIO(path.read_text())))
        assert list(frame.columns) == rows[0]
        assert len(frame) == len(rows) - 1
        for (_, row), cells in zip(frame.iterrows(), rows[1:]):
            for column, cell in zip(rows[0], cells):
                value = row[column]
                if cell == "":
                    assert isinstance(value, float) and math.isnan(value)
                elif isinstance(value, str):
                    assert value == cell
                else:
                    assert value == float(cell), (path.name, column)


def test_unknown_names_list_the_known_ones(result: kleinrock.RunResult) -> None:
    with pytest.raises(KeyError, match="forward, backward"):
        result.trace("sideways")
    [first, *_] = kleinrock.load(SCENARIOS / "examples" / "mathis.toml").expand()
    untraced = kleinrock.run(first)
    with pytest.raises(LookupError, match="trace_interval"):
        untraced.trace(str(untraced.flows["name"][0]))


def test_a_save_refuses_a_directory_that_is_not_an_output(
    result: kleinrock.RunResult, tmp_path: Path
) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(ValueError, match="not a kleinrock output directory"):
        result.save(tmp_path)
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]


def test_the_notebook_view_is_the_report(result: kleinrock.RunResult) -> None:
    page = result.report_html()
    assert page.startswith("<!DOCTYPE html>") and "<svg" in page
    view = result._repr_html_()
    assert view.startswith("<iframe srcdoc=") and "&lt;svg" in view


def test_tunnels_have_frames_traces_and_latencies() -> None:
    first = kleinrock.load(MULTIPATH).expand()[0]
    run = kleinrock.run(first.set("trace_interval", "100ms"))
    assert len(run.tunnels) == 1
    name = str(run.tunnels["name"][0])
    assert not run.tunnel_trace(name).empty
    assert not run.latency_cdf(name).empty


def test_from_dict_is_the_file() -> None:
    data = {
        "name": "reverse-traffic",
        "duration": "20s",
        "links": [{"name": "l", "rate": "10Mbps", "delay": "10ms", "buffer": "1bdp"},
                  {"name": "r", "rate": "10Mbps", "delay": "10ms", "buffer": "100pkt"}],
        "flows": [{"cc": "bbr", "path": ["l"], "reverse_path": ["r"],
                   "params": {"probe_rtt_interval": "5s"}}],
    }
    text = """name = "reverse-traffic"
duration = "20s"
[[links]]
name = "l"
rate = "10Mbps"
delay = "10ms"
buffer = "1bdp"
[[links]]
name = "r"
rate = "10Mbps"
delay = "10ms"
buffer = "100pkt"
[[flows]]
cc = "bbr"
path = ["l"]
reverse_path = ["r"]
params = { probe_rtt_interval = "5s" }
"""
    a = kleinrock.run(kleinrock.Scenario.from_dict(data)).to_json()
    assert a == kleinrock.run(kleinrock.Scenario.from_text(text)).to_json()


def test_expand_gives_each_run_of_a_sweep() -> None:
    demo = kleinrock.Scenario.demo()
    runs = demo.expand()
    assert [r.runs for r in runs] == [1, 1] and not runs[0].is_sweep
    df = kleinrock.sweep(demo, progress=False)
    for i, run in enumerate(runs):
        assert kleinrock.run(run).flows["goodput_bps"][0] == df["goodput_bps"][i]


def test_copies_are_independent() -> None:
    a = kleinrock.load(SCENARIOS / "examples" / "reverse_traffic.toml")
    b = a.copy().set("flows.0.cc", "bbr")
    assert a.overrides == [] and b.overrides == ['flows.0.cc="bbr"']
    assert "reverse" in repr(a) and b.runs == 1 and not b.is_sweep


def test_controllers_are_listed_with_their_parameters() -> None:
    listed = {c.name: c for c in kleinrock.controllers()}
    assert {"newreno", "cubic", "bbr", "quic_dc", "ccid2", "ccid5"} <= set(listed)
    assert listed["ccid2"].dccp_only and not listed["cubic"].dccp_only
    assert any(p.name == "beta" for p in listed["cubic"].params)
