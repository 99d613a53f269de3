"""Scenarios: a scenario file's text and the ``set`` overrides applied to it."""

from __future__ import annotations

import numbers
import os
from collections.abc import Mapping, Sequence
from typing import Any, Union

from . import _native
from ._errors import ScenarioError

#: What a field of a scenario can be set to: a string (with its unit, e.g. ``"10Mbps"``), a
#: number, a boolean, a list or a table of these.
Value = Union[str, int, float, bool, Sequence[Any], Mapping[str, Any]]

_ACCEPTED = "accepted: a string, number, boolean, list or table (dict) of these"


#: Deepest nesting of lists and tables in a value (a scenario file allows 32).
_MAX_DEPTH = 32


def _plain(value: object, origin: str, field: str, depth: int = 0) -> Any:
    """``value`` as plain data, str, bool, int, float, list and dict (tuples, numpy scalars
    and arrays, pandas Series included), or a ScenarioError naming ``field``."""
    if depth > _MAX_DEPTH:
        raise ScenarioError(origin, field, f"nested deeper than {_MAX_DEPTH}; {_ACCEPTED}")
    tolist = getattr(value, "tolist", None)
    if callable(tolist) and not isinstance(value, (str, bytes, Mapping)):
        value = tolist()
    if isinstance(value, (str, bool)):
        return value
    if isinstance(value, numbers.Integral):
        if not -(2**63) <= int(value) < 2**63:
            raise ScenarioError(origin, field, f"{value} is out of range; accepted: integers "
                                "from -2^63 to 2^63 - 1 (TOML's)")
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise ScenarioError(origin, field, f"key {k!r} is not a string; {_ACCEPTED}")
            out[k] = _plain(v, origin, f"{field}.{k}" if field else k, depth + 1)
        return out
    if isinstance(value, Sequence) and not isinstance(value, (bytes, bytearray)):
        return [_plain(v, origin, f"{field}[{i}]", depth + 1) for i, v in enumerate(value)]
    kind = "None" if value is None else type(value).__name__
    raise ScenarioError(origin, field, f"{kind} has no TOML form; {_ACCEPTED}")


class Scenario:
    """A scenario: the text of a scenario file (the README's "Scenario format") with the
    overrides :meth:`set` applied to it, validated at every step.

    Make one with :func:`kleinrock.load` (a file), :meth:`from_dict`, :meth:`from_text` or
    :meth:`demo`; change it with :meth:`set`; run it with :func:`kleinrock.run`, or every point
    of its ``[sweep]`` grid with :func:`kleinrock.sweep`.
    """

    def __init__(
        self, text: str, origin: str, default_name: str, overrides: Sequence[str] = ()
    ) -> None:
        self._text = text
        self._origin = origin
        self._default_name = default_name
        self._overrides = list(overrides)
        self._name, self._is_sweep, self._runs, self._seeds = _native.check(
            text, origin, default_name, self._overrides
        )

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> Scenario:
        """The scenario file at ``path``; its name defaults to the file's stem, as on the
        command line."""
        text = _native.read(os.fspath(path))
        stem = os.path.splitext(os.path.basename(os.fspath(path)))[0] or "scenario"
        return cls(text, os.fspath(path), stem)

    @classmethod
    def from_text(cls, text: str, name: str = "scenario") -> Scenario:
        """A scenario from TOML text; ``name`` is used when the text has no ``name``."""
        return cls(text, "<text>", name)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], name: str = "scenario") -> Scenario:
        """A scenario from a dict of the scenario file's fields (as ``tomllib.load`` would give
        it), e.g. ``{"duration": "10s", "links": [...], "flows": [...]}``."""
        plain = _plain(data, "<dict>", "")
        if not isinstance(plain, dict):
            raise ScenarioError("<dict>", "", f"the scenario must be a dict; {_ACCEPTED}")
        text = _native.toml_document(plain)
        return cls(text, "<dict>", name)

    @classmethod
    def demo(cls) -> Scenario:
        """The built-in demo (``kleinrock demo``): NewReno and Cubic, each alone on 10 Mbps,
        50 ms, a 2 BDP buffer, 60 s; a sweep of two points."""
        return cls(_native.DEMO_SCENARIO, "<built-in demo>", "demo")

    def set(self, path: str, value: Value) -> Scenario:
        """Sets the field at ``path`` (``flows.0.cc``, ``flows[0].params.beta``,
        ``sweep."flows.0.cc"``; the paths of ``--set``) to ``value`` and returns the scenario.

        A value replaces what is there, except that a table merges into a table. The change is
        validated at once: a bad path or value raises :class:`ScenarioError` naming the field
        and leaves the scenario as it was.
        """
        if "=" in path:
            raise ScenarioError(self._origin, path, "a path has no `=`; give the value apart")
        plain = _plain(value, self._origin, path)
        literal = _native.toml_literal(plain)
        overrides = [*self._overrides, f"{path}={literal}"]
        self._name, self._is_sweep, self._runs, self._seeds = _native.check(
            self._text, self._origin, self._default_name, overrides
        )
        self._overrides = overrides
        return self

    def expand(self) -> list[Scenario]:
        """Each run of the scenario as a scenario of its own: one per grid point and seed, in
        the order :func:`kleinrock.sweep` runs them, with the point's values and its seed
        written in and no ``[sweep]`` table; e.g. to run one point of a sweep with traces."""
        return [
            Scenario(text, f"{origin} (run {i} of {self._runs})", self._name)
            for i, (text, origin, _point, _overrides) in enumerate(
                _native.points(*self._args()), start=1
            )
        ]

    def copy(self) -> Scenario:
        """An independent copy (``set`` on it leaves this one unchanged)."""
        return Scenario(self._text, self._origin, self._default_name, self._overrides)

    @property
    def name(self) -> str:
        """The scenario's name (its ``name`` field, else the file's stem)."""
        return self._name

    @property
    def is_sweep(self) -> bool:
        """Whether it has a ``[sweep]`` table (then run it with :func:`kleinrock.sweep`)."""
        return self._is_sweep

    @property
    def runs(self) -> int:
        """How many runs it makes: one, or each grid point once per seed."""
        return self._runs

    @property
    def seeds(self) -> list[int] | None:
        """The seeds every grid point runs with, when the ``[sweep]`` table gives ``seeds`` or
        ``replicates``; None otherwise (each run then uses the scenario's ``seed``)."""
        return None if self._seeds is None else list(self._seeds)

    @property
    def text(self) -> str:
        """The scenario file's text, before the overrides."""
        return self._text

    @property
    def origin(self) -> str:
        """Where the text came from: the file's path, ``<dict>``, ``<text>`` or
        ``<built-in demo>``."""
        return self._origin

    @property
    def overrides(self) -> list[str]:
        """The overrides applied so far, as ``path=value`` (TOML values), in order."""
        return list(self._overrides)

    def _args(self) -> tuple[str, str, str, list[str]]:
        return self._text, self._origin, self._default_name, list(self._overrides)

    def __repr__(self) -> str:
        runs = f", {self._runs} runs" if self._is_sweep else ""
        sets = f", {len(self._overrides)} overrides" if self._overrides else ""
        return f"<kleinrock.Scenario {self._name!r} from {self._origin}{runs}{sets}>"


def load(path: str | os.PathLike[str]) -> Scenario:
    """Loads and validates the scenario file at ``path`` (TOML, the README's "Scenario
    format"). Raises :class:`ScenarioError` naming the file, the field and what is accepted."""
    return Scenario.from_file(path)
