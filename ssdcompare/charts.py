"""Charts for the report, drawn with matplotlib and embedded as inline PNG data.

Readable in greyscale and by colour-blind readers: every device has its own marker and line
style as well as a colour (Okabe-Ito palette); CPU-bound points are drawn hollow with a cross.
"""

from __future__ import annotations

import base64
import io

import matplotlib

matplotlib.use("Agg")  # no display needed; set before pyplot is imported
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

# Okabe-Ito colours, distinct for the common colour-vision deficiencies
COLOURS = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"]
MARKERS = ["o", "s", "^", "D", "v", "P", "X", "*"]
LINESTYLES = ["-", "--", "-.", ":", (0, (5, 1)), (0, (3, 1, 1, 1)), (0, (1, 1)), "-"]


def _style(index: int) -> dict[str, object]:
    return {
        "color": COLOURS[index % len(COLOURS)],
        "marker": MARKERS[index % len(MARKERS)],
        "linestyle": LINESTYLES[index % len(LINESTYLES)],
    }


def _png(fig: plt.Figure) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110, bbox_inches="tight")
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()


def _draw_series(ax: plt.Axes, points: pd.DataFrame, x: str, y: str, index: int, label: str,
                 err: tuple[str, str] | None = None) -> None:  # fmt: skip
    style = _style(index)
    points = points.sort_values(x)
    ax.plot(points[x], points[y], label=label, linewidth=1.6, markersize=6, **style)
    if err is not None:
        low, high = points[err[0]], points[err[1]]
        ax.vlines(points[x], low, high, color=style["color"], linewidth=1, alpha=0.7)
    bound = points[points["cpu_bound"].fillna(False).astype(bool)]
    if not bound.empty:
        ax.scatter(bound[x], bound[y], s=150, facecolors="none", edgecolors="black",
                   linewidths=1.4, zorder=5)  # fmt: skip
        ax.scatter(bound[x], bound[y], s=40, marker="x", color="black", zorder=6)


def _finish(ax: plt.Axes, title: str, xlabel: str, ylabel: str, any_bound: bool) -> None:
    ax.set_title(title, fontsize=10)
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    ax.grid(True, which="both", alpha=0.3)
    handles, labels = ax.get_legend_handles_labels()
    if any_bound:
        marker = plt.Line2D([], [], marker="o", markersize=11, markerfacecolor="none",
                            markeredgecolor="black", linestyle="none")  # fmt: skip
        handles.append(marker)
        labels.append("CPU-bound (measures the CPU)")
    ax.legend(handles, labels, fontsize=8)


def qd_chart(summary: pd.DataFrame, metric: str, ylabel: str, title: str) -> str:
    """`metric` (e.g. iops) against queue depth, one line per device, repeats' min-max as bars."""
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    any_bound = False
    for index, (label, points) in enumerate(summary.groupby("label", sort=False)):
        _draw_series(ax, points, "iodepth", f"{metric}_mean", index, str(label),
                     (f"{metric}_min", f"{metric}_max"))  # fmt: skip
        any_bound |= bool(points["cpu_bound"].fillna(False).astype(bool).any())
    ax.set_xscale("log", base=2)
    depths = sorted(summary["iodepth"].dropna().astype(int).unique())
    ax.set_xticks(depths, [str(d) for d in depths])
    if metric.startswith("lat"):
        ax.set_yscale("log")
    ax.set_ylim(bottom=0 if not metric.startswith("lat") else None)
    _finish(ax, title, "queue depth (I/Os in flight per job)", ylabel, any_bound)
    return _png(fig)


def mix_chart(summary: pd.DataFrame, title: str) -> str:
    """IOPS against read share for a read/write mix sweep, one line per device."""
    fig, ax = plt.subplots(figsize=(6.4, 3.6))
    any_bound = False
    for index, (label, points) in enumerate(summary.groupby("label", sort=False)):
        _draw_series(ax, points, "rwmixread", "iops_mean", index, str(label),
                     ("iops_min", "iops_max"))  # fmt: skip
        any_bound |= bool(points["cpu_bound"].fillna(False).astype(bool).any())
    ax.set_xlim(102, -2)  # 100 % read on the left, as mix sweeps are usually drawn
    ax.set_ylim(bottom=0)
    _finish(ax, title, "read share (%)", "IOPS", any_bound)
    return _png(fig)


def percentile_chart(frame: pd.DataFrame, job: str) -> str:
    """p50 / p99 / p99.9 latency of one job per device and direction (log scale)."""
    rows = frame[(frame["job"] == job) & (frame["status"] == "ok")
                 & (frame["direction"] != "sync")]  # fmt: skip
    means = rows.groupby(["label", "direction"], sort=False)[
        ["lat_p50_us", "lat_p99_us", "lat_p999_us"]
    ].mean()
    fig, ax = plt.subplots(figsize=(6.4, 0.5 + 0.45 * max(len(means), 1)))
    hatches = ["", "///", "..."]
    names = ["p50", "p99", "p99.9"]
    height = 0.26
    for offset, (column, name, hatch) in enumerate(
        zip(["lat_p50_us", "lat_p99_us", "lat_p999_us"], names, hatches, strict=True)
    ):
        positions = [i + (offset - 1) * height for i in range(len(means))]
        ax.barh(positions, means[column], height=height, label=name, hatch=hatch,
                color=COLOURS[offset], edgecolor="black", linewidth=0.5)  # fmt: skip
    ax.set_yticks(range(len(means)), [f"{label} {direction}" for label, direction in means.index])
    ax.invert_yaxis()
    ax.set_xscale("log")
    ax.set_xlabel("latency (µs, log scale)")
    ax.set_title(f"{job}: latency percentiles", fontsize=10)
    ax.grid(True, axis="x", which="both", alpha=0.3)
    ax.legend(fontsize=8)
    return _png(fig)
