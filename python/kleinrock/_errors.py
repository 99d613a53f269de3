"""The exception every bad scenario input raises."""

from __future__ import annotations


class ScenarioError(ValueError):
    """A scenario that cannot be loaded, changed or swept.

    ``str(error)`` is the command line's message, ``origin: field: what is accepted``;
    the parts are attributes:

    - ``origin``: the file (or ``<dict>``, ``<built-in demo>``);
    - ``field``: the field at fault as a path like ``flows[0].cc`` or
      ``sweep."flows.0.cc"``; empty when the whole file is at fault;
    - ``message``: what is wrong and what is accepted.
    """

    def __init__(self, origin: str, field: str, message: str) -> None:
        super().__init__(origin, field, message)
        self.origin = origin
        self.field = field
        self.message = message

    def __str__(self) -> str:
        if self.field:
            return f"{self.origin}: {self.field}: {self.message}"
        return f"{self.origin}: {self.message}"
