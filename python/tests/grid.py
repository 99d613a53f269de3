"""The 24-run sweep the Dask and cache tests share: long enough per run (about a tenth of a
second) that a worker can be killed, or the sweep stopped, while runs are under way."""

from __future__ import annotations

import kleinrock

GRID = {
    "flows.0.cc": ["newreno", "cubic", "bbr", "westwood"],
    "links.0.buffer": ["0.5bdp", "1bdp", "2bdp"],
}
SEEDS = [1, 2]


def scenario() -> kleinrock.Scenario:
    """One Cubic flow at 100 Mbps for 60 s, without its own grid."""
    return kleinrock.Scenario.from_dict(
        {
            "name": "grid",
            "duration": "60s",
            "warmup": "5s",
            "links": [
                {"name": "bottleneck", "rate": "100Mbps", "delay": "25ms", "buffer": "1bdp"},
                {"name": "return", "rate": "100Mbps", "delay": "25ms", "buffer": "1000pkt"},
            ],
            "flows": [
                {"name": "bulk", "cc": "cubic", "path": ["bottleneck"],
                 "reverse_path": ["return"]},
            ],
        }
    )
