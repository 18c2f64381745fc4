"""Charts for the report, drawn with matplotlib and embedded as inline PNG data.

Readable in greyscale and by colour-blind readers: every device has its own marker and line
style as well as a colour (Okabe-Ito palette); CPU- or host-bound points are drawn hollow with
a cross.

Every chart function returns the image, or None when there is nothing it can draw (e.g. a job
that completed no I/O). Values that are missing, or not positive on a log axis, are left out.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Iterator
from contextlib import contextmanager

import matplotlib

matplotlib.use("Agg")  # no display needed; set before pyplot is imported
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from ssdcompare.frame import known_true  # noqa: E402

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


@contextmanager
def _figure(width: float, height: float) -> Iterator[tuple[plt.Figure, plt.Axes]]:
    # closed whatever happens: a chart that fails must not leave its figure in pyplot's registry
    # laid out as it is drawn: a tight bounding box would draw every chart twice
    fig, ax = plt.subplots(figsize=(width, height), layout="constrained")
    try:
        yield fig, ax
    finally:
        plt.close(fig)


def _png(fig: plt.Figure) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=110)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode()


def _plottable(points: pd.DataFrame, x: str, y: str, log_x: bool, log_y: bool) -> pd.DataFrame:
    """The rows that can be drawn: x and y known, and positive on a log axis."""
    keep = points[x].notna() & points[y].notna()
    if log_x:
        keep &= points[x].astype("float64") > 0
    if log_y:
        keep &= points[y].astype("float64") > 0
    return points[known_true(keep)]


def _draw_series(ax: plt.Axes, points: pd.DataFrame, x: str, y: str, index: int, label: str,
                 err: tuple[str, str] | None = None, log_y: bool = False) -> None:  # fmt: skip
    style = _style(index)
    points = points.sort_values(x)
    xs = points[x].astype("float64")
    ax.plot(xs, points[y].astype("float64"), label=label, linewidth=1.6, markersize=6, **style)
    if err is not None:
        low = points[err[0]].astype("float64")
        high = points[err[1]].astype("float64")
        spans = low.notna() & high.notna() & ((low > 0) | (not log_y))
        if spans.any():
            ax.vlines(xs[spans], low[spans], high[spans], color=style["color"], linewidth=1,
                      alpha=0.7)  # fmt: skip
    bound = points[known_true(points["cpu_bound"])]
    if not bound.empty:
        bx, by = bound[x].astype("float64"), bound[y].astype("float64")
        ax.scatter(bx, by, s=150, facecolors="none", edgecolors="black", linewidths=1.4,
                   zorder=5)  # fmt: skip
        ax.scatter(bx, by, s=40, marker="x", color="black", zorder=6)


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
        labels.append("CPU- or host-bound (measures the host)")
    ax.legend(handles, labels, fontsize=8)


def qd_chart(summary: pd.DataFrame, metric: str, ylabel: str, title: str) -> str | None:
    """`metric` (e.g. iops) against queue depth, one line per device, repeats' min-max as bars.

    Latency is drawn on a log axis, IOPS on a linear one from 0. None when no point can be
    drawn.
    """
    log_y = metric.startswith("lat")
    points = _plottable(summary, "iodepth", f"{metric}_value", log_x=True, log_y=log_y)
    if points.empty:
        return None
    with _figure(6.4, 3.6) as (fig, ax):
        any_bound = False
        for index, (label, series) in enumerate(points.groupby("label", sort=False)):
            _draw_series(ax, series, "iodepth", f"{metric}_value", index, str(label),
                         (f"{metric}_min", f"{metric}_max"), log_y)  # fmt: skip
            any_bound |= bool(known_true(series["cpu_bound"]).any())
            _mark_knee(ax, series, f"{metric}_value", index)
        ax.set_xscale("log", base=2)
        depths = sorted(points["iodepth"].astype(int).unique())
        ax.set_xticks(depths, [str(d) for d in depths])
        if log_y:
            ax.set_yscale("log")
        else:
            ax.set_ylim(bottom=0)
        _finish(ax, title, "queue depth (I/Os in flight per job)", ylabel, any_bound)
        return _png(fig)


def _mark_knee(ax: plt.Axes, series: pd.DataFrame, y: str, index: int) -> None:
    """A device's saturation knee (summary `knee_qd`): a large hollow diamond on its line."""
    if "knee_qd" not in series.columns or series["knee_qd"].isna().all():
        return
    knee = series[series["iodepth"] == series["knee_qd"]]
    if knee.empty:
        return
    ax.scatter(knee["iodepth"].astype("float64"), knee[y].astype("float64"), s=170, marker="D",
               facecolors="none", edgecolors=_style(index)["color"], linewidths=1.8, zorder=7,
               label=f"knee: QD{int(knee['iodepth'].iloc[0])}")  # fmt: skip


def mix_chart(summary: pd.DataFrame, title: str) -> str | None:
    """IOPS against read share for a read/write mix sweep, one line per device (None when no
    point can be drawn)."""
    points = _plottable(summary, "rwmixread", "iops_value", log_x=False, log_y=False)
    if points.empty:
        return None
    with _figure(6.4, 3.6) as (fig, ax):
        any_bound = False
        for index, (label, series) in enumerate(points.groupby("label", sort=False)):
            _draw_series(ax, series, "rwmixread", "iops_value", index, str(label),
                         ("iops_min", "iops_max"))  # fmt: skip
            any_bound |= bool(known_true(series["cpu_bound"]).any())
        ax.set_xlim(102, -2)  # 100 % read on the left, as mix sweeps are usually drawn
        ax.set_ylim(bottom=0)
        _finish(ax, title, "read share (%)", "IOPS", any_bound)
        return _png(fig)


def percentile_chart(frame: pd.DataFrame, job: str) -> str | None:
    """p50 / p99 / p99.9 latency of one job per device and direction (log scale).

    Bars without a positive value are left out; None when the job has none at all.
    """
    rows = frame[(frame["job"] == job) & (frame["status"] == "ok")
                 & (frame["direction"] != "sync")]  # fmt: skip
    columns = ["lat_p50_us", "lat_p99_us", "lat_p999_us"]
    means = rows.groupby(["label", "direction"], sort=False)[columns].mean()
    means = means[(means > 0).any(axis=1)]
    if means.empty:
        return None
    with _figure(6.4, 0.5 + 0.45 * len(means)) as (fig, ax):
        hatches = ["", "///", "..."]
        names = ["p50", "p99", "p99.9"]
        height = 0.26
        for offset, (column, name, hatch) in enumerate(zip(columns, names, hatches, strict=True)):
            values = means[column].reset_index(drop=True)
            shown = values[values > 0]
            positions = [i + (offset - 1) * height for i in shown.index]
            ax.barh(positions, shown, height=height, label=name, hatch=hatch,
                    color=COLOURS[offset], edgecolor="black", linewidth=0.5)  # fmt: skip
        ax.set_yticks(range(len(means)),
                      [f"{label} {direction}" for label, direction in means.index])  # fmt: skip
        ax.invert_yaxis()
        ax.set_xscale("log")
        ax.set_xlabel("latency (µs, log scale)")
        ax.set_title(f"{job}: latency percentiles", fontsize=10)
        ax.grid(True, axis="x", which="both", alpha=0.3)
        ax.legend(fontsize=8)
        return _png(fig)


TIMESERIES_PER_CHART = 12  # small charts per image; more jobs make more images


def timeseries_chart(seconds: pd.DataFrame, cliffs: pd.DataFrame, title: str) -> str | None:
    """IOPS second by second: one small chart per job (`seconds` rows: job, label, t_s, iops;
    repeats averaged), devices overlaid, and each device's write cliff (`cliffs` rows: job,
    label, cliff_s) as a dashed line in its colour. None when there is nothing to draw."""
    points = seconds[seconds["iops"].notna()]
    jobs = list(dict.fromkeys(points["job"]))[:TIMESERIES_PER_CHART]
    if not jobs:
        return None
    labels = list(dict.fromkeys(points["label"]))
    columns = min(3, len(jobs))
    rows = -(-len(jobs) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(3.4 * columns, 2.3 * rows), squeeze=False,
                             layout="constrained")  # fmt: skip
    try:
        for ax, job in zip(axes.flat, jobs, strict=False):
            runs = points[points["job"] == job].groupby(["label", "repeat", "t_s"], sort=False)
            # directions added within a run, then runs averaged per second
            mean = runs["iops"].sum().groupby(level=["label", "t_s"], sort=False).mean()
            mean = mean.reset_index()
            for label, series in mean.groupby("label", sort=False):
                style = _style(labels.index(label))
                ax.plot(series["t_s"], series["iops"], color=style["color"],
                        linestyle=style["linestyle"], linewidth=1.2, label=str(label))  # fmt: skip
                cliff = cliffs[(cliffs["job"] == job) & (cliffs["label"] == label)]
                for t in cliff["cliff_s"].dropna():
                    ax.axvline(t, color=style["color"], linestyle="--", linewidth=1)
            ax.set_title(str(job), fontsize=8)
            ax.set_ylim(bottom=0)
            ax.tick_params(labelsize=7)
            ax.grid(True, alpha=0.3)
        for ax in list(axes.flat)[len(jobs) :]:
            ax.set_visible(False)
        handles, names = axes.flat[0].get_legend_handles_labels()
        # the legend on top, under no title of its own: the report's caption names the chart
        fig.legend(handles, names, loc="outside upper center", ncol=min(len(names), 4),
                   fontsize=8, title=title, title_fontsize=10)  # fmt: skip
        fig.supxlabel("seconds since the job started", fontsize=8)
        fig.supylabel("IOPS", fontsize=8)
        return _png(fig)
    finally:
        plt.close(fig)
