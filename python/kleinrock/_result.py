"""A finished run: its summary as DataFrames, its traces and distributions."""

from __future__ import annotations

import html
import io
import json
import os
import tempfile
from typing import Any

import pandas as pd

from . import _native
from ._scenario import Scenario


def _csv_frame(data: bytes) -> pd.DataFrame:
    """A CSV file of the run as a DataFrame; every float exactly as written (empty cells are
    NaN; the tests compare each value with the file's text). pandas 3 parses floats exactly
    by default and deprecates asking; pandas 2 must be asked."""
    if int(pd.__version__.split(".")[0]) < 3:
        return pd.read_csv(io.BytesIO(data), float_precision="round_trip")
    return pd.read_csv(io.BytesIO(data))


def tidy(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` with its missing values as NaN: a column of numbers and None (or of None only,
    a metric no flow had) is float64, so it has the same type in every frame."""
    for column in df.columns:
        values = df[column]
        if values.dtype == object and all(
            v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)) for v in values
        ):
            df[column] = values.astype("float64")
    return df


def _frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Rows of nested dicts as a DataFrame, nested fields as ``outer.inner`` columns."""
    return tidy(pd.json_normalize(rows, sep=".")) if rows else pd.DataFrame()


class RunResult:
    """The result of :func:`kleinrock.run`: the numbers ``kleinrock run --json`` prints, as
    DataFrames, and the traces and distributions ``--out`` writes.

    - ``summary``: the summary as a dict (``summary.json``);
    - ``flows``, ``links``, ``tunnels``: one row per flow, link and tunnel with its metrics
      (nested ones such as ``latency.p95_ms`` flattened with a dot);
    - :meth:`trace`, :meth:`link_trace`, :meth:`tunnel_trace`: the time series (the scenario
      needs a ``trace_interval``);
    - :meth:`rtt_cdf`, :meth:`latency_cdf`: the distributions;
    - :meth:`to_json`, :meth:`save`; in a notebook the run's HTML report is shown.
    """

    def __init__(self, run: _native.Run) -> None:
        self._run = run
        self._json = run.summary_json()
        self.summary: dict[str, Any] = json.loads(self._json)
        self.flows = _frame(self.summary["flows"])
        self.links = _frame(self.summary["links"])
        self.tunnels = _frame(self.summary.get("tunnels", []))

    @property
    def jain_index(self) -> float | None:
        """Jain's fairness index over the flows' goodputs (None with fewer than two flows)."""
        value = self.summary["jain_index"]
        return None if value is None else float(value)

    def to_json(self) -> str:
        """The summary as JSON, byte for byte what ``kleinrock run --json`` prints (without
        its final newline)."""
        return self._json

    def _trace(self, kind: str, name: str) -> pd.DataFrame:
        data = self._run.trace_csv(kind, name)
        if data is not None:
            return _csv_frame(data)
        names = self._run.trace_names(kind)
        if not names:
            raise LookupError(
                "the run has no traces: give the scenario a trace_interval, "
                "e.g. scenario.set('trace_interval', '10ms')"
            )
        raise KeyError(f"no {kind} trace named {name!r}; there are: {', '.join(names)}")

    def trace(self, flow: str) -> pd.DataFrame:
        """The trace of flow ``flow`` (the columns of ``flows/<flow>.csv``: ``time_s``,
        ``mode``, ``cwnd_bytes``, ..., then the controller's own estimates)."""
        return self._trace("flow", flow)

    def link_trace(self, link: str) -> pd.DataFrame:
        """The trace of link ``link`` (``links/<link>.csv``: queue, drops, rate)."""
        return self._trace("link", link)

    def tunnel_trace(self, name: str) -> pd.DataFrame:
        """The trace of tunnel ``name`` or of one of its paths, ``<tunnel>.<path>``
        (``tunnels/<name>.csv``)."""
        return self._trace("tunnel", name)

    def _cdf(self, kind: str, name: str) -> pd.DataFrame:
        data = self._run.cdf_csv(kind, name)
        if data is None:
            names = ", ".join(self._run.cdf_names(kind)) or "none"
            raise KeyError(f"no {kind} distribution named {name!r}; there are: {names}")
        return _csv_frame(data)

    def rtt_cdf(self, flow: str) -> pd.DataFrame:
        """The RTT distribution of ``flow`` in the measurement window: ``rtt_ms``,
        ``fraction`` (``rtt_cdf/<flow>.csv``)."""
        return self._cdf("rtt", flow)

    def latency_cdf(self, name: str) -> pd.DataFrame:
        """The per-packet latency distribution of a flow, a tunnel or a tunnel's path
        (``<tunnel>.<path>``): ``latency_ms``, ``fraction``."""
        return self._cdf("latency", name)

    def save(self, dir: str | os.PathLike[str]) -> None:
        """Writes what ``kleinrock run --out DIR`` writes (summary, traces, CDFs,
        ``report.html``). ``dir`` must be new, empty or an earlier kleinrock output; it is
        never left half-written."""
        self._run.save(os.fspath(dir))

    def report_html(self) -> str:
        """The run's ``report.html`` (self-contained: inline style and SVG plots)."""
        with tempfile.TemporaryDirectory(prefix="kleinrock-") as tmp:
            out = os.path.join(tmp, "run")
            self.save(out)
            with open(os.path.join(out, "report.html"), encoding="utf-8") as f:
                return f.read()

    def _repr_html_(self) -> str:
        page = html.escape(self.report_html(), quote=True)
        return (
            f'<iframe srcdoc="{page}" title="kleinrock report" '
            'style="width: 100%; height: 640px; border: 0"></iframe>'
        )

    def __repr__(self) -> str:
        names = ", ".join(str(f["name"]) for f in self.summary["flows"])
        return f"<kleinrock.RunResult {self.summary['scenario']!r}: flows {names}>"


def run(scenario: Scenario) -> RunResult:
    """Runs ``scenario`` (one without a ``[sweep]`` table) in the simulator, with the GIL
    released, and returns its :class:`RunResult`: the numbers of ``kleinrock run --json``,
    bit for bit."""
    return RunResult(_native.run(*scenario._args()))
