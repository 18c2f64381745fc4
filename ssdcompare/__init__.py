"""ssdcompare: compare storage devices with fio, and say which numbers to trust.

In Python (e.g. Jupyter)::

    import ssdcompare
    frame = ssdcompare.load("results/20261122-120000-quick")   # one row per run and direction
    summary = ssdcompare.job_summary(frame)                       # repeats aggregated
    ssdcompare.side_by_side(summary, "iops", baseline="nvme0n1")  # devices side by side
    raw = ssdcompare.read_fio("old-run.json")                     # fio output made elsewhere
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ssdcompare.errors import SsdcompareError

__version__ = "0.1.0"

__all__ = ["SsdcompareError", "__version__", "job_summary", "load", "read_fio", "side_by_side"]

if TYPE_CHECKING:
    from ssdcompare.frame import job_summary, load, read_fio, side_by_side


def __getattr__(name: str) -> Any:
    # pandas is imported only when the frame functions are used, so the CLI starts quickly
    if name in ("load", "read_fio", "job_summary", "side_by_side"):
        from ssdcompare import frame

        return getattr(frame, name)
    raise AttributeError(f"module 'ssdcompare' has no attribute {name!r}")
