"""kleinrock from Python: the command line's scenarios, simulator and sweeps, with results as
pandas DataFrames.

>>> import kleinrock
>>> result = kleinrock.run(kleinrock.load("scenarios/examples/reverse_traffic.toml"))
>>> result.flows[["name", "cc", "goodput_bps", "rtt_mean_ms"]]

- :func:`load` (or :class:`Scenario` ``.from_dict``, ``.from_text``, ``.demo``) reads and
  validates a scenario; :meth:`Scenario.set` changes a field with the paths of ``--set``.
- :func:`run` runs one and returns a :class:`RunResult` (``.flows``, ``.links``,
  ``.trace(flow)``, ``.link_trace(link)``, ``.rtt_cdf(flow)``, ``.to_json()``).
- :func:`sweep` runs a grid, locally on all cores or on a Dask cluster, into one DataFrame.
- :func:`controllers` lists the controllers and their parameters.
- Bad input raises :class:`ScenarioError` with the command line's message.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from . import _native
from ._errors import ScenarioError
from ._result import RunResult, run
from ._scenario import Scenario, Value, load
from ._sweep import Progress, sweep

__version__: str = _native.__version__

__all__ = [
    "Controller",
    "Param",
    "Progress",
    "RunResult",
    "Scenario",
    "ScenarioError",
    "Value",
    "__version__",
    "controllers",
    "load",
    "run",
    "sweep",
]


@dataclass(frozen=True)
class Param:
    """A controller's parameter: its name, kind (number, bool, duration, name), default and
    meaning, as ``kleinrock list`` shows them."""

    name: str
    kind: str
    default: str
    doc: str


@dataclass(frozen=True)
class Controller:
    """A controller: its name in scenarios, a one-line summary with its source, its
    parameters, and what it needs from the transport."""

    name: str
    summary: str
    params: tuple[Param, ...]
    runtime_params: tuple[str, ...]
    one_way_delay: bool
    rate_based: bool
    subflows: bool
    dccp_only: bool


def controllers() -> list[Controller]:
    """The controllers with their parameters and defaults (``kleinrock list``)."""
    out = []
    for c in json.loads(_native.controllers()):
        params = tuple(Param(**p) for p in c.pop("params"))
        runtime = tuple(c.pop("runtime_params"))
        out.append(Controller(params=params, runtime_params=runtime, **c))
    return out
