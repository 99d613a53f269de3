"""Bad input from Python raises ScenarioError naming the field, with the command line's
message, and leaves the scenario as it was; nothing else escapes, nothing crashes."""

from __future__ import annotations

import pickle
import random
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

import kleinrock
from conftest import SCENARIOS, cli
from kleinrock import ScenarioError

REVERSE = SCENARIOS / "examples" / "reverse_traffic.toml"


def cli_error(*args: str) -> str:
    """The message of the command line's ``error: ...`` line, which exits with status 2."""
    out = cli(*args)
    assert out.returncode == 2, out.stderr
    return out.stderr.strip().removeprefix("error: ")


@pytest.mark.parametrize(
    ("path", "value", "cli_value", "field"),
    [
        ("flows.0.colour", "red", "red", "flows[0].colour"),
        ("duration", 5, "5", "duration"),
        ("flows.0.cc", "nope", "nope", "flows[0].cc"),
        ("flows.0.params", {"beta": "high"}, "{ beta = \"high\" }", "flows[0].params.beta"),
        ("links.7.rate", "1Mbps", "1Mbps", "--set links.7.rate"),
    ],
)
def test_a_bad_set_names_the_field_as_the_command_line_does(
    path: str, value: Any, cli_value: str, field: str
) -> None:
    scenario = kleinrock.load(REVERSE)
    with pytest.raises(ScenarioError) as error:
        scenario.set(path, value)
    assert error.value.field == field
    assert error.value.origin == str(REVERSE)
    assert str(error.value) == cli_error("run", str(REVERSE), "--set", f"{path}={cli_value}")
    assert scenario.overrides == [], "a refused change leaves the scenario as it was"
    assert kleinrock.run(scenario).to_json() == kleinrock.run(kleinrock.load(REVERSE)).to_json()


def test_a_bad_file_names_the_file_and_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text(REVERSE.read_text().replace('cc = "cubic"', 'cc = "cubik"', 1))
    with pytest.raises(ScenarioError) as error:
        kleinrock.load(bad)
    assert error.value.field == "flows[0].cc"
    assert "cubic" in error.value.message, "the message lists what is accepted"
    assert str(error.value) == cli_error("run", str(bad))
    missing = tmp_path / "missing.toml"
    with pytest.raises(ScenarioError) as error:
        kleinrock.load(missing)
    assert error.value.origin == str(missing)
    assert str(error.value) == cli_error("run", str(missing))


def test_a_sweep_over_a_missing_path_names_it() -> None:
    with pytest.raises(ScenarioError) as error:
        kleinrock.sweep(kleinrock.load(REVERSE), grid={"flows.5.cc": ["cubic"]})
    assert error.value.field == 'sweep."flows.5.cc"'
    assert "out of range" in error.value.message
    with pytest.raises(ScenarioError) as error:
        kleinrock.sweep(kleinrock.load(REVERSE), grid={"flows.0.cc": "cubic"})
    assert error.value.field == 'sweep."flows.0.cc"'
    assert error.value.message == "must be a list of values"


def test_values_without_a_toml_form_are_refused_by_field() -> None:
    scenario = kleinrock.load(REVERSE)
    with pytest.raises(ScenarioError) as error:
        scenario.set("flows.0.params", {"beta": None})
    assert error.value.field == "flows.0.params.beta"
    with pytest.raises(ScenarioError) as error:
        scenario.set("flows.0.params", {"beta": object()})
    assert "object has no TOML form" in error.value.message
    with pytest.raises(ScenarioError) as error:
        kleinrock.Scenario.from_dict({"duration": "1s", "links": [None]})
    assert (error.value.origin, error.value.field) == ("<dict>", "links[0]")


def test_running_a_sweep_file_says_to_sweep_it() -> None:
    with pytest.raises(ScenarioError) as error:
        kleinrock.run(kleinrock.Scenario.demo())
    assert error.value.field == "sweep"
    assert "kleinrock.sweep" in error.value.message


PATHS = ["duration", "seed", "warmup", "links.0.rate", "links.0.buffer", "links.0.qdisc",
         "links.0.loss", "flows.0.cc", "flows.0.params", "flows.0.start", "flows.1.size",
         "flows.0.app", "flows.0.transport", "flows.9.cc", "sweep.seeds", "links", "flows.0"]
VALUES: list[Any] = ["", "0", "-1s", "1e999Mbps", "bbr", "fq", -1, 0, 2**63, 1e308, -0.5,
                     float("nan"), True, [], [1, "a"], {}, {"x": 1}, {"cc": "vivace"},
                     "1000000000000s", "999999999pkt"]


def test_random_bad_input_only_ever_raises_scenario_error() -> None:
    rng = random.Random(7)
    accepted = 0
    for _ in range(400):
        scenario = kleinrock.load(REVERSE)
        try:
            scenario.set(rng.choice(PATHS), rng.choice(VALUES))
            scenario.set("warmup", "0s").set("duration", "1s")
        except ScenarioError as e:
            assert e.origin and str(e)
            continue
        accepted += 1
        if scenario.is_sweep:
            kleinrock.sweep(scenario, progress=False)
        else:
            kleinrock.run(scenario)
    assert accepted >= 10, "some changes are valid, and those run"


def test_numpy_and_pandas_values_are_plain_values() -> None:
    import numpy as np

    scenario = kleinrock.load(REVERSE).set("flows.0.params", {"beta": np.float64(0.6)})
    window: Any = np.int64(100_000)
    losses: Any = np.array([0.0, 0.01])
    scenario.set("flows.0.max_in_flight", window)
    df = kleinrock.sweep(scenario, grid={"links.0.loss": losses}, seeds=pd.Series([1, 2]),
                         progress=False)
    assert list(df["links.0.loss"].unique()) == [0.0, 0.01]
    with pytest.raises(ScenarioError, match="has no `=`"):
        scenario.set("name=x", 1)


def test_the_error_survives_pickling() -> None:
    error = ScenarioError("f.toml", "flows[0].cc", "unknown")
    copy = pickle.loads(pickle.dumps(error))
    assert (copy.origin, copy.field, copy.message, str(copy)) == (
        "f.toml", "flows[0].cc", "unknown", str(error))
