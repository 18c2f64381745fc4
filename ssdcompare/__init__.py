"""ssdcompare: compare storage devices with fio, and say which numbers to trust.

In Python (e.g. Jupyter)::

    import ssdcompare
    frame = ssdcompare.load("results/20261122-120000-quick")   # one row per run and direction
    summary = ssdcompare.job_summary(frame)                       # repeats aggregated
    ssdcompare.side_by_side(summary, "iops", baseline="nvme0n1")  # devices side by side
    raw = ssdcompare.read_fio("old-run.json")                     # fio output made elsewhere
    run = ssdcompare.run_sweep(["nvme0n1", "nvme1n1"], suite="quick")  # a sweep, as the CLI runs
    run.frame()                                                   # its results
    seconds = ssdcompare.timeseries("results/20261122-120000-quick")  # every run, per second
    ssdcompare.bursts("results/20261122-120000-anandtech")        # each burst of bursty jobs
    ssdcompare.headline(summary)                                  # the answer, a line per device
    ssdcompare.latency_targets(frame, "p99=1ms")                  # curves' IOPS within a p99
    ssdcompare.changes("results/A", "results/B", "iops < -5%").frame()  # over time, the gate
    ssdcompare.plot.queue_depth(frame).savefig("qd.png")          # the report's charts, matplotlib
    ssdcompare.history(["results/A", "results/B", "results/C"]).frame()  # drives over dates
    ssdcompare.pts_tables("results/20261127-pts-iops").iops()     # a SNIA PTS test's tables

This module imports nothing when it loads: the command line starts from ssdcompare.cli.entry,
which must be able to catch Ctrl-C before anything slow is imported.
"""

from ssdcompare.version import __version__

__all__ = [
    "SsdcompareError", "SweepRun", "__version__", "bursts", "job_summary", "load", "read_fio",
    "run_sweep", "side_by_side", "timeseries", "headline", "latency_targets", "plot",
    "changes", "history", "pts_tables",
]  # fmt: skip

_LAZY = {
    "SsdcompareError": "ssdcompare.errors",
    "load": "ssdcompare.analysis.frame",
    "read_fio": "ssdcompare.analysis.frame",
    "job_summary": "ssdcompare.analysis.summary",
    "side_by_side": "ssdcompare.analysis.compare",
    "run_sweep": "ssdcompare.cli.api",
    "timeseries": "ssdcompare.analysis.persecond",
    "bursts": "ssdcompare.analysis.perburst",
    "headline": "ssdcompare.analysis.answer",
    "latency_targets": "ssdcompare.analysis.slo",
    "changes": "ssdcompare.analysis.overtime",
    "history": "ssdcompare.analysis.history",
    "pts_tables": "ssdcompare.analysis.pts",
    "SweepRun": "ssdcompare.cli.api",
}


_MODULES = {"plot"}  # public modules, imported when first used as `ssdcompare.plot`


def __getattr__(name: str) -> object:
    # pandas and the sweep machinery are imported only when used, so the CLI starts quickly
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name]), name)
    if name in _MODULES:
        import importlib

        return importlib.import_module(f"ssdcompare.{name}")
    raise AttributeError(f"module 'ssdcompare' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY, *_MODULES])
