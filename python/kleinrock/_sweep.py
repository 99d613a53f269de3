"""Sweeps: every point of a scenario's grid, once per seed, in-process on all cores or on a
Dask cluster, with an optional cache that lets an interrupted sweep resume."""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import re
import sys
import tempfile
import warnings
from collections import Counter
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import TYPE_CHECKING, Any, Union

import pandas as pd

from . import _native
from ._result import tidy
from ._scenario import Scenario, Value

if TYPE_CHECKING:
    from distributed import Client

#: Called after each run of a sweep with (runs done, runs in all).
Progress = Callable[[int, int], None]

#: One run as the native module hands it out: (scenario text, origin, sweep point, overrides).
Spec = tuple[str, str, list[tuple[str, str]], list[tuple[str, str]]]


def _run_spec(spec: Spec) -> tuple[str, str]:
    """One run's summary as JSON, a pure function of the point's text: what a worker runs.
    Returned with the worker's build fingerprint, which must be the caller's."""
    return _fingerprint(), _native.run_point(*spec)


@functools.lru_cache(maxsize=1)
def _fingerprint() -> str:
    """The version and the native module's own bytes: a rebuilt simulator never reads
    results cached by another build, nor mixes results with another build's workers."""
    digest = hashlib.sha256(_native.__version__.encode())
    with open(_native.__file__, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def _key(spec: Spec) -> str:
    """The cache key of a run: its scenario text (which fixes the run) and sweep point (which
    labels it), and the build. Not the overrides that made the grid, so a grid extended by an
    axis value or a seed finds the runs it shares with the earlier one."""
    text, _origin, point, _overrides = spec
    content = json.dumps([_fingerprint(), text, point])
    return hashlib.sha256(content.encode()).hexdigest()


class _Cache:
    """Summaries of finished runs, one file per run named by its key, each written whole
    (a temporary file renamed into place)."""

    def __init__(self, dir: str | os.PathLike[str] | None) -> None:
        self.dir = None if dir is None else os.fspath(dir)
        if self.dir is not None:
            os.makedirs(self.dir, exist_ok=True)

    def get(self, key: str) -> str | None:
        if self.dir is None:
            return None
        try:
            with open(os.path.join(self.dir, f"{key}.json"), encoding="utf-8") as f:
                text = f.read()
            json.loads(text)
            return text
        except (OSError, ValueError):
            return None

    def put(self, key: str, summary: str) -> None:
        """Keeps a summary, written whole or not at all; the cache only saves work, so a
        failure to write it is a warning, not an error."""
        if self.dir is None:
            return
        try:
            fd, tmp = tempfile.mkstemp(dir=self.dir, prefix=f".{key}.", suffix=".tmp")
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    f.write(summary)
                os.replace(tmp, os.path.join(self.dir, f"{key}.json"))
            except BaseException:
                os.unlink(tmp)
                raise
        except OSError as e:
            warnings.warn(f"kleinrock.sweep: cannot cache a run in {self.dir}: {e}", stacklevel=2)


def _stderr_progress(done: int, total: int) -> None:
    end = "\n" if done == total else ""
    print(f"\rkleinrock sweep: {done}/{total} runs", end=end, file=sys.stderr, flush=True)


def _progress_of(progress: bool | Progress | None) -> Progress | None:
    if progress is None:
        return _stderr_progress if sys.stderr.isatty() else None
    if progress is True:
        return _stderr_progress
    if progress is False:
        return None
    return progress


def _cores() -> int:
    """The cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


def _local(todo: dict[str, Spec], cache: _Cache, workers: int) -> Generator[tuple[str, str], None, None]:
    """Runs ``todo`` on ``workers`` threads, each run in Rust with the GIL released; each
    summary is cached as soon as it exists. Yields (key, summary) as runs finish. Closed early
    (an exception, Ctrl-C), it cancels the runs not started and waits for those under way
    (a run cannot be stopped half way), so the cache is complete when the exception arrives."""

    def compute(key: str, spec: Spec) -> str:
        summary = _native.run_point(*spec)
        cache.put(key, summary)
        return summary

    pool = ThreadPoolExecutor(max_workers=max(1, min(len(todo), workers)))
    try:
        pending: dict[Future[str], str] = {
            pool.submit(compute, key, spec): key for key, spec in todo.items()
        }
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                yield pending.pop(future), future.result()
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def _dask(todo: dict[str, Spec], cache: _Cache, client: Client) -> Generator[tuple[str, str], None, None]:
    """Runs ``todo`` on a Dask cluster, one task per run (under a key of its own, so nothing
    is taken from an earlier sweep's tasks). A worker lost in the middle is survived: the
    scheduler recomputes its tasks elsewhere (the runs are pure). Closed early, it caches the
    runs that had finished and cancels the others."""
    from distributed import as_completed

    futures = [client.submit(_run_spec, spec, pure=False) for spec in todo.values()]
    keys = {future.key: key for future, key in zip(futures, todo)}
    delivered: set[str] = set()
    try:
        for future in as_completed(futures):
            key, summary = keys[future.key], _checked(future.result())
            cache.put(key, summary)
            delivered.add(key)
            yield key, summary
    finally:
        for future in futures:
            key = keys[future.key]
            if future.status == "finished" and key not in delivered:
                cache.put(key, _checked(future.result()))
        client.cancel(futures)


def _checked(result: tuple[str, str]) -> str:
    """A worker's summary, refused if the worker runs another build than this process."""
    fingerprint, summary = result
    if fingerprint != _fingerprint():
        raise RuntimeError(
            "a Dask worker runs another build of kleinrock than this process (version or "
            f"native library differ; this one is {_native.__version__}): install the same "
            "package on every worker"
        )
    return summary


def _typed(text: str) -> Any:
    """A swept value's text as the value: an integer, a float (written with digits), a
    boolean, or the text (`"2bdp"`, `"cubic"`, a table)."""
    if re.fullmatch(r"[+-]?\d+", text):
        return int(text)
    if re.fullmatch(r"[+-]?(\d+\.\d*|\.\d+|\d+)([eE][+-]?\d+)?", text):
        return float(text)
    if text in ("true", "false"):
        return text == "true"
    return text


def _rows(summaries: list[dict[str, Any]], seeds_per_point: int) -> pd.DataFrame:
    """One row per (point, seed, flow): the point's index and swept values, the seed, the
    flow's metrics, the run's links' metrics as ``<link>.<metric>``, and Jain's index."""
    frames = []
    for i, s in enumerate(summaries):
        flows = pd.json_normalize(s["flows"], sep=".").rename(columns={"name": "flow"})
        head: dict[str, Any] = {"point": i // seeds_per_point}
        head.update({path: _typed(v) for path, v in s["point"]})
        head["seed"] = s["seed"]
        for link in s["links"]:
            for metric, value in link.items():
                if metric != "name":
                    flows[f"{link['name']}.{metric}"] = value
        flows["jain_index"] = s["jain_index"]
        for n, (column, value) in enumerate(head.items()):
            flows.insert(n, column, [value] * len(flows))
        frames.append(flows)
    return tidy(pd.concat(frames, ignore_index=True)) if frames else pd.DataFrame()


def sweep(
    scenario: Scenario,
    grid: Mapping[str, Sequence[Value]] | None = None,
    seeds: Iterable[int] | None = None,
    client: Client | None = None,
    cache: str | os.PathLike[str] | None = None,
    progress: bool | Progress | None = None,
    workers: int | None = None,
) -> pd.DataFrame:
    """Runs every point of the scenario's ``[sweep]`` grid, once per seed, and returns one
    DataFrame with a row per (point, seed, flow).

    - ``grid``: ``{path: [values]}`` axes added to the scenario's own grid (an axis it already
      has, spelled the same, is replaced), the paths of ``--set``:
      ``{"flows.0.cc": ["cubic", "bbr"]}``.
    - ``seeds``: run every point once per seed (the ``[sweep]`` table's ``seeds``). A file
      whose table gives ``replicates`` refuses ``seeds``; change their number with
      ``scenario.set("sweep.replicates", n)``.
    - ``client``: a ``dask.distributed.Client``: one task per run on its cluster; without it
      the runs share this machine's cores (``workers`` threads, default one per core), each
      in Rust with the GIL released. Runs are pure functions of (scenario, seed): the
      DataFrame is the same wherever they ran.
    - ``cache``: a directory keeping each finished run, keyed by its content and the build;
      a sweep rerun with it (after an interruption, say, or with more seeds) computes only
      the runs it does not hold.
    - ``progress``: ``True`` prints ``runs done/total`` on standard error, ``False`` nothing,
      a function is called with (done, total); by default it prints only to a terminal.

    Columns: ``point`` (the grid point's index), each swept path with its value, ``seed``,
    ``flow``, ``cc`` and the flow's metrics (as in ``summary.json``), ``<link>.<metric>`` for
    each link, and ``jain_index``; a missing value is NaN. ``df.attrs`` holds ``runs``,
    ``computed`` (distinct runs simulated) and ``cached`` (runs read from the cache).
    Bad input raises :class:`ScenarioError` naming the field. Ctrl-C (or an exception from
    ``progress``) stops the sweep once the runs under way have finished, and they are cached.
    """
    s = scenario.copy()
    for path, values in (grid or {}).items():
        s.set(f'sweep."{path}"', values)
    if seeds is not None:
        seeds = list(seeds)
        s.set("sweep.seeds", seeds)
    specs = _native.points(*s._args())
    keys = [_key(spec) for spec in specs]
    store = _Cache(cache)
    found = {k: text for k in set(keys) if (text := store.get(k)) is not None}
    cached = sum(1 for k in keys if k in found)
    todo = {k: spec for k, spec in zip(keys, specs) if k not in found}
    report = _progress_of(progress)
    copies = Counter(keys)
    done = cached
    if report is not None:
        report(done, len(keys))
    if client is None:
        runs = _local(todo, store, workers or _cores())
    else:
        runs = _dask(todo, store, client)
    with contextlib.closing(runs):
        for key, summary in runs:
            found[key] = summary
            done += copies[key]
            if report is not None:
                report(done, len(keys))
    summaries = [json.loads(found[k]) for k in keys]
    df = _rows(summaries, len(s.seeds or [0]))
    df.attrs.update({"runs": len(keys), "computed": len(todo), "cached": cached})
    return df
