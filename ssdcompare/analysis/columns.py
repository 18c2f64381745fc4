"""The results frame's columns, written down once: name, type, unit, where the value comes
from (in fio's JSON or the results folder) and the part of docs/results-format.md that
describes it. `ssdcompare.load` makes its columns from this registry, in this order and with
these types; the tables of docs/results-format.md are made from it too
(`python -m ssdcompare.analysis.columns docs/results-format.md` writes them) and a test
checks that the two agree. A new column is one entry here and the code that fills it.

The notation of the sources (`D`, `L`, `manifest`, `workload`, `status`) is explained in the
docs above the tables.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from ssdcompare.target.probes import probe_columns

# the parts of the docs' load() section, in their order
SECTIONS = ("Identity", "Workload", "Performance", "Latency", "CPU", "Drive state", "Bursts",
            "Probes", "Status and provenance")  # fmt: skip
TYPES = ("str", "float", "Int64", "boolean", "tuple of float")
LOAD_HEADING = "## load(): one row per run and direction"


@dataclass(frozen=True)
class Column:
    """One column of the results frame."""

    name: str
    type: str  # one of TYPES: float64, Int64 and boolean columns are typed so; str: text or None
    unit: str  # empty when the column has none
    section: str  # one of SECTIONS
    source: str  # where the value comes from, as the docs say it (markdown)
    stored: bool = True  # False: made when frames are put together (`label`), not per run


_ID, _WORKLOAD, _PERF, _LAT, _CPU, _STATE, _BURSTS, _PROBES, _STATUS = SECTIONS

# fmt: off
# in the frame's order: `label`, made last, is its last column
FRAME_COLUMNS: tuple[Column, ...] = (
    Column("host", "str", "", _ID,
           "the `--hosts` name of the device's host (`manifest.targets[].host.name`), else "
           "`manifest.host.hostname`"),
    Column("port", "Int64", "", _ID,
           "the port of the device's fio server (`manifest.targets[].host.port`); NA for a device "
           "on this machine without `--hosts`"),
    Column("remote", "boolean", "", _ID,
           "the device is on another machine: nothing of it was inspected here and its CPU is "
           "known from fio's own figures only"),
    Column("device", "str", "", _ID,
           "`status.target`: the target's short name, as in `runs/<device>/`, without its host "
           "(`nvme0n1` of `a:nvme0n1`); on a group member's rows the member's name"),
    Column("group", "str", "", _ID,
           "a group's name (`nvme0n1+nvme1n1`, `--devices` with `+`) on the rows of its runs; None"
           " for a device measured alone"),
    Column("member", "Int64", "", _ID,
           "on a group's rows: the member's number (from 1) for its own figures, from its section "
           "`[<job>.m<N>]` of fio's output; NA on the group's own rows, whose figures add the "
           "members up (IOPS, bandwidth summed; latency over all their I/O, percentiles from the "
           "merged json+ bins)"),
    Column("job", "str", "", _ID,
           "`status.job`: the workload id"),
    Column("repeat", "Int64", "", _ID,
           "`status.repeat`, from 1"),
    Column("direction", "str", "", _ID,
           "from the workload: `read`, `write`, `trim`, `sync` (fsync/fdatasync calls). `mixed` "
           "when fio reported reads and writes as one (`unified_rw_reporting`, accepted in a sweep"
           " with `--allow-option`): the rows then follow what fio printed"),
    Column("status", "str", "", _STATUS,
           "`status.status`: `ok`, `failed`, `interrupted`, `skipped`, or `damaged`: a run whose "
           "stored files cannot be used, never written by a sweep: the status says `ok` but "
           "`fio.json` or `cpu.json` is refused, damaged or holds values no run gives, its "
           "`status.json` is damaged or names another run, or its folder is a link or not in the "
           "plan ([above](#a-results-folder-from-someone-else)); `error` names the file and why. A"
           " run folder without `status.json` is `failed` (it never finished)"),
    Column("error", "str", "", _STATUS,
           "`status.error`, or why the run's files could not be used: the file, relative to the "
           "folder, and the reason"),
    Column("verify_failed", "boolean", "", _STATUS,
           "data came back wrong: true for a run in which fio found a block that failed its "
           "check (`status.verify_failure`, from fio's words: a checksum mismatch, a bad "
           "header; the run is `failed` and `error` says what and where), false for an `ok` run"
           " of a job with `verify` (every block fio read back passed), NA otherwise (nothing "
           "checked, the run ended before its checks could tell, or a read found no verified "
           "data: `status.verify_failure.no_verified_data`, a `failed` run whose `error` says "
           "so)"),
    Column("verify_offset_bytes", "Int64", "bytes", _STATUS,
           "where the data came back wrong: the offset of the failed block in the file or "
           "device, as fio named it (`status.verify_failure.offset_bytes`); NA when fio named "
           "none or nothing failed"),
    Column("verified_bytes", "Int64", "bytes", _STATUS,
           "the bytes fio read back and checked in an `ok` run of a job with `verify`: "
           "`jobs[0].read.io_bytes` of a job that only writes (its read-back) or only reads "
           "(every read is checked); 0 when fio checked nothing (the terminal and the report "
           "say so); NA for mixes (fio counts their reads and checks together) and jobs "
           "without `verify`"),
    Column("rw", "str", "", _WORKLOAD,
           "`workload.rw`"),
    Column("bs_bytes", "Int64", "bytes", _WORKLOAD,
           "`workload.bs_bytes`"),
    Column("iodepth", "Int64", "I/Os in flight per job", _WORKLOAD,
           "`workload.iodepth`"),
    Column("numjobs", "Int64", "fio job processes", _WORKLOAD,
           "`workload.numjobs`"),
    Column("rwmixread", "Int64", "% reads", _WORKLOAD,
           "`workload.rwmixread`; NA for patterns that are not mixes"),
    Column("fsync", "Int64", "writes per fsync, 0 = never", _WORKLOAD,
           "`workload.fsync`"),
    Column("fdatasync", "Int64", "writes per fdatasync, 0 = never", _WORKLOAD,
           "`workload.extra.fdatasync`"),
    Column("runtime_s", "float", "s, measured (after the ramp)", _WORKLOAD,
           "`workload.runtime_s` (a fraction of a second for a scaled run, see `scale`)"),
    Column("ramp_s", "Int64", "s", _WORKLOAD,
           "`workload.ramp_s`"),
    Column("io_size_bytes", "Int64", "bytes", _WORKLOAD,
           "`workload.io_size_bytes`: a size-capped job ends after these bytes or `runtime_s`, "
           "whichever comes first (fio `io_size` with `time_based=0`; for a cap in spans, "
           "`io_size: 4x`, the bytes its jobfile gave fio, each process's); NA for time-based "
           "jobs"),
    Column("thinktime_us", "Int64", "µs", _WORKLOAD,
           "`workload.thinktime_us`: fio idles this long after every `thinktime_blocks` I/Os (a "
           "bursty job, see [bursts](methodology.md#bursts)); NA for jobs without idle time"),
    Column("span", "str", "", _WORKLOAD,
           'the span that ran, in words, from the `size=` of the run\'s stored `jobfile.fio`: "1 '
           'GiB", "20 %", "20 % (12 MiB)" (a share of a file, which fio gets in bytes), "whole '
           'target" or "whole target (64 MiB)" (a file). A byte span larger than the target is cut'
           ' to fit and says so: "8 MiB (cut from 32 MiB: the target is smaller)". Runs without a '
           "stored jobfile (skipped) show the span the workload asked for"),
    Column("span_bytes", "Int64", "bytes", _WORKLOAD,
           "the bytes that span covers: the `size=` in bytes, a share of the device's "
           "`manifest.devices[].size_bytes`, or the whole size; NA when not known"),
    Column("ioengine", "str", "", _WORKLOAD,
           'the engine fio ran with: `jobs[0]."job options".ioengine`, else `"global '
           'options".ioengine` (ssdcompare writes it under `[global]`). For runs without fio '
           "output: `workload.ioengine`, else `manifest.ioengine`"),
    Column("extra_options", "str", "", _WORKLOAD,
           "`workload.extra` as one line, sorted, e.g. `rate_iops=200 zero_buffers`; None when "
           "there are none"),
    Column("workload_options", "str", "", _WORKLOAD,
           "the workload keys that make it like production's, as one line (`zipf:1.2 compress "
           "50 % verify crc32c io_uring hipri cpus_allowed=0-1`): its distribution, data, "
           "verify, engine (when the workload names one), engine options and placement; None "
           "when it gives none"),
    Column("random_distribution", "str", "", _WORKLOAD,
           "where a random job's I/O lands: `uniform` (fio's default), or "
           "`workload.random_distribution` as fio takes it (`zipf:1.2`, `pareto:0.9`, "
           "`normal:10`, `zoned:90/10:10/90`); None for sequential jobs"),
    Column("compress_pct", "Int64", "% of each block", _WORKLOAD,
           "how compressible the data written is: `workload.buffer_compress_percentage`, or 0 "
           "(fio's default buffers are random bytes); NA for jobs that write nothing"),
    Column("dedupe_pct", "Int64", "% of blocks", _WORKLOAD,
           "the share of written blocks that repeat an earlier one: "
           "`workload.dedupe_percentage`, or 0 (fio scrambles its buffers on every write by "
           "default); NA for jobs that write nothing"),
    Column("refill_buffers", "boolean", "", _WORKLOAD,
           "whether fio made new random bytes for every write: `workload.refill_buffers`, "
           "else true when `dedupe_percentage` is given (fio then refills) and false otherwise; "
           "NA for jobs that write nothing"),
    Column("data", "str", "", _WORKLOAD,
           "the data written, in words (\"50 % compressible\", or fio's default: random "
           "bytes, scrambled on every write); None for jobs that write nothing"),
    Column("verify", "str", "", _WORKLOAD,
           "`workload.verify`: the checksum every written block carried and was checked "
           "against (a read job checks what an earlier job wrote); None when nothing was "
           "checked"),
    Column("hipri", "boolean", "", _WORKLOAD,
           "`workload.hipri`: completions polled for, not signalled by interrupts"),
    Column("sqthread_poll", "boolean", "", _WORKLOAD,
           "`workload.sqthread_poll`: a kernel thread took io_uring's submissions"),
    Column("fixedbufs", "boolean", "", _WORKLOAD,
           "`workload.fixedbufs`: io_uring's buffers registered once, not mapped per I/O"),
    Column("registerfiles", "boolean", "", _WORKLOAD,
           "`workload.registerfiles`: the target registered with io_uring once"),
    Column("cpus_allowed", "str", "", _WORKLOAD,
           "`workload.cpus_allowed`: the CPUs fio's jobs ran on (`0-3,8`); None: any the "
           "sweep could use"),
    Column("numa_cpu_nodes", "str", "", _WORKLOAD,
           "`workload.numa_cpu_nodes`: the NUMA nodes whose CPUs fio's jobs ran on; None: any"),
    Column("numa_mem_policy", "str", "", _WORKLOAD,
           "`workload.numa_mem_policy`: where fio's buffers were placed (`bind:0`, `local`, "
           "`interleave:0-1`); None: the kernel's default"),
    Column("curve", "str", "", _WORKLOAD,
           "on the runs of a latency-vs-load curve (`curve:` in the suite): the job the curve "
           "is made of (`randread-4k-qd32` of `randread-4k-qd32@70pct`); None otherwise"),
    Column("curve_pct", "float", "% of the maximum", _WORKLOAD,
           "a curve point's share of the maximum (`workload.point`); NaN on the curve's "
           "unpaced run (`@max`), which measures the maximum"),
    Column("curve_base", "str", "", _WORKLOAD,
           "what a curve's shares are of: `own` (the device's own maximum), `fastest` (the "
           "highest maximum of the sweep's devices in that repeat) or a rate in IOPS the suite "
           "gave (`20000`)"),
    Column("iops", "float", "I/Os per second", _PERF,
           "`D.iops`; NaN for `sync` (fio gives no rate)"),
    Column("bw_bytes", "float", "bytes per second", _PERF,
           "`D.bw_bytes`; before fio 3.2 `D.bw` × 1024 (`bw` is KiB/s); NaN for `sync`"),
    Column("io_bytes", "float", "bytes", _PERF,
           "`D.io_bytes` (fio 2.x printed KiB under this name: × 1024); 0 for `sync`"),
    Column("total_ios", "float", "I/Os (for `sync`: calls)", _PERF,
           "`D.total_ios`; for `sync` the larger of `jobs[0].sync.total_ios` and "
           "`jobs[0].sync.lat_ns.N`, since fio can print 0 calls next to N samples"),
    Column("rate_asked_iops", "float", "I/Os per second", _PERF,
           "a curve point's rate: `jobs[0].\"job options\".rate_iops` (per process: "
           "reads,writes,trims) added over the directions the job did, times its processes; "
           "the whole run's, on every row of it"),
    Column("rate_reached_pct", "float", "% of the rate asked", _PERF,
           "the run's IOPS (every direction added) / `rate_asked_iops` × 100; above 100 when "
           "fio paced faster than asked (it rounds the mean gap between I/Os to whole µs)"),
    Column("rate_reached", "boolean", "", _PERF,
           "False (\"could not reach\") when the run fell more than 2 % short of its rate: "
           "its latency is no point of the curve"),
    Column("lat_mean_us", "float", "µs", _LAT,
           "`L.mean / 1000`"),
    Column("lat_stddev_us", "float", "µs", _LAT,
           "`L.stddev / 1000` (fio's sample standard deviation)"),
    Column("lat_min_us", "float", "µs", _LAT,
           "`L.min / 1000`"),
    Column("lat_p50_us", "float", "µs", _LAT,
           '`L.percentile["50.000000"] / 1000`'),
    Column("lat_p99_us", "float", "µs", _LAT,
           '`L.percentile["99.000000"] / 1000`'),
    Column("lat_p999_us", "float", "µs", _LAT,
           '`L.percentile["99.900000"] / 1000`'),
    Column("lat_p9999_us", "float", "µs", _LAT,
           '`L.percentile["99.990000"] / 1000` (fio\'s default percentile list has it; a PTS '
           "latency test reports it)"),
    Column("lat_max_us", "float", "µs", _LAT,
           "`L.max / 1000`"),
    Column("lat_source", "str", "", _LAT,
           "`lat` when `D.lat_ns` has percentiles (every ssdcompare jobfile sets "
           "`lat_percentiles=1`), or when there is no `clat_ns` (the `sync` row). "
           "Otherwise `clat`"),
    Column("lat_dist_us", "tuple of float", "µs", _LAT,
           "the latency at each of `ssdcompare.fio.result.models.DISTRIBUTION_PERCENTILES` (1, 5, "
           "10, 20 …"
           " 90, 95, 99, 99.5, 99.9, 99.95, 99.99, 99.999, 99.9999 %). From `L.bins` (the json+ "
           "histogram) when present, by fio's own rule: the first bucket, in rising latency, at "
           "which the running count reaches that share of all I/Os. Without bins, from "
           "`L.percentile` (NaN where fio printed none). None with neither. The report draws each "
           "job's latency distribution from it; in CSV it is written as a tuple"),
    Column("clat_mean_us", "float", "µs", _LAT,
           "`D.clat_ns.mean / 1000`; NaN for `sync` and under `disable_clat`"),
    Column("clat_p99_us", "float", "µs", _LAT,
           '`D.clat_ns.percentile["99.000000"] / 1000`'),
    Column("slat_mean_us", "float", "µs", _LAT,
           "`D.slat_ns.mean / 1000`; NaN where fio measured no submission latency (`N` = 0, "
           "e.g. synchronous engines), under `disable_slat` and `disable_lat` (which leaves slat "
           "counting from a start fio never took) and for `sync`"),
    Column("latency_depth", "Int64", "I/Os in flight per job", _LAT,
           "`jobs[0].latency_depth`: the queue depth fio's search for a latency target ended at "
           "(the fio options `latency_target`, `latency_window`, `latency_percentile` in a suite's"
           " `extra`; [methodology.md](methodology.md#fios-own-search-for-a-latency-target)). "
           "NA for a job without a target, for which fio prints a `latency_target` of 0 and its "
           "iodepth here. With numjobs, fio prints one process's depth. The same on every row "
           "of a run; a group member's is its own section's"),
    Column("latency_target_us", "float", "µs", _LAT,
           "`jobs[0].latency_target / 1000` (fio writes ns; fio 2.x wrote µs): the latency "
           "the search held the I/Os to; NaN without a target"),
    Column("latency_percentile", "float", "% of I/Os", _LAT,
           "`jobs[0].latency_percentile`: the share of a window's I/Os that had to finish "
           "within the target (100 when not set); NaN without a target"),
    Column("latency_window_us", "float", "µs", _LAT,
           "`jobs[0].latency_window` (fio writes µs): the time over which each depth was "
           "judged; NaN without a target"),
    Column("latency_at_percentile_us", "float", "µs", _LAT,
           "the run's own total latency at `latency_percentile`, over its reads, writes and "
           "trims together as the search counts them: from their `D.lat_ns.bins` added up, by "
           "fio's rule (see `lat_dist_us`), else the `D.lat_ns.percentile` fio printed for a job"
           " of one direction. Over the run's measured time: the last window only when the search "
           "settled. It tells a depth of 1 that meets the target from a search that found no "
           "depth that does. NaN without a target or without percentiles of `lat_ns`"),
    Column("fio_cpu_usr_pct", "float", "% of one CPU, per job process", _CPU,
           "`jobs[0].usr_cpu`: the job thread's user time over its wall time, after the ramp"),
    Column("fio_cpu_sys_pct", "float", "% of one CPU, per job process", _CPU,
           "`jobs[0].sys_cpu`"),
    Column("cpu_bound", "boolean", "", _CPU,
           "the judgement ([methodology.md](methodology.md#cpu-bound-judgement)): True, False, or "
           "NA when it cannot be judged. NA for runs that are not `ok`"),
    Column("cpu_bound_reason", "str", "", _CPU,
           'why it is CPU-bound, in words; "no CPU samples" when unknown for lack of samples (or '
           "why the CPUs the workload chose cannot be judged); None otherwise"),
    Column("cpu_busy_pct", "float", "%", _CPU,
           "for each CPU, the mean over the samples of 100 − `idle` − `iowait` from "
           "`samples[].cpus`; then the mean over all CPUs"),
    Column("cpu_max_busy_pct", "float", "%", _CPU,
           "the highest of those per-CPU means"),
    Column("irq_softirq_max_pct", "float", "%", _CPU,
           "per CPU, the mean of `irq` + `softirq`; the highest CPU's"),
    Column("fio_worker_max_pct", "float", "% of one core", _CPU,
           "per thread, the mean of its `samples[].workers` values; the busiest thread's"),
    Column("fio_worker_max_runnable_pct", "float", "% of the time", _CPU,
           "per thread, the mean of its `samples[].runnable` values; the highest. NaN for format 1"
           " traces"),
    Column("fio_workers_total_cores", "float", "cores", _CPU,
           "the mean over samples of the sum of all `samples[].workers` values, / 100"),
    Column("cpu_count", "Int64", "logical CPUs", _CPU,
           "`manifest.host.cpu_threads`"),
    Column("sampler_cpu_pct", "float", "% of one core", _CPU,
           "`status.sampler_cpu_pct`"),
    Column("steal_pct", "float", "%", _CPU,
           "per CPU, the mean `steal` share; then the mean over all CPUs: time the hypervisor gave"
           " to other guests"),
    Column("iowait_pct", "float", "%", _CPU,
           "the same for `iowait` (idle with I/O outstanding)"),
    Column("others_pct", "float", "% of one core", _CPU,
           "the mean of `samples[].others_pct`: processes that are neither fio nor ssdcompare. NaN"
           " for format 2 traces"),
    Column("others_top", "str", "", _CPU,
           "the busiest of them at the look where they used the most (`samples[].others_top`)"),
    Column("measured_s", "float", "s", _CPU,
           "`D.runtime` / 1000: the time fio measured the direction for"),
    Column("ceiling_iops", "float", "I/Os per second", _CPU,
           "the job's IOPS on a RAM disk (`sweep --ceiling`): `ceiling/<job>/fio.json`, all "
           "directions added. NaN without a ceiling"),
    Column("ceiling_pct", "float", "%", _CPU,
           "the run's IOPS (all directions) / `ceiling_iops` × 100: 80 % or more makes the verdict"
           " `host`"),
    Column("verdict", "str", "", _CPU,
           "what limited the result "
           "([methodology.md](methodology.md#verdicts-what-limited-each-result)): `host`, `cpu`, "
           "`throttled`, `disturbed`, `unknown` or `drive`, from the columns above and the "
           "drive's health log (`throttle_*`, `warning_temp_min`, `critical_temp_min`); None "
           "for runs that are not `ok`"),
    Column("verdict_reason", "str", "", _CPU,
           "why, in words with the figures; None for `drive`"),
    Column("cliff_s", "float", "s", _STATE,
           "the write cliff ([methodology.md](methodology.md#write-cliffs)): the first second, "
           "counted from the job's start as fio's logs count it, from which the job's IOPS (all "
           "directions and fio processes added, from `timeseries_iops.*.log`) stay below half "
           "their level of the first 3 seconds. NaN when there is no cliff, fewer than 6 seconds "
           "of logs, or no logs"),
    Column("cliff_before_iops", "float", "I/Os per second", _STATE,
           "the median IOPS of the first 3 seconds"),
    Column("cliff_after_iops", "float", "I/Os per second", _STATE,
           "the median IOPS from the cliff to the end"),
    Column("cliff_written_bytes", "float", "bytes", _STATE,
           "what the job had written when its IOPS fell: its write bandwidth "
           "(`timeseries_bw.*.log`, processes added) over the seconds before `cliff_s`; 0 when"
           " no write was logged before it (a reading job)"),
    Column("cliff_cause", "str", "", _STATE,
           "the cliff's likely cause ([methodology.md](methodology.md#write-cliffs)): "
           "`thermal: ...` (the drive's health log counted throttling during the run), "
           "`CPU: ...` (the sampler saw a fio worker at 90 % of a core or more), `cache: ...` "
           "(no throttling; the bytes written when it fell), or `cache or thermal: ...` "
           "without a health log"),
    Column("drive_state", "str", "", _STATE,
           "the state preconditioning put the drive in before the run "
           '([methodology.md](methodology.md#preconditioning-and-steady-state)): "as found" when '
           'none was asked for (`manifest.precondition` empty); "filled" or "fill failed" '
           '(`precondition/<device>/fill/fill.json` `ok`); "steady", "not steady" or "steady state'
           ' unknown" (`precondition/<device>/<job>/steady.json` `attained`), joined by ", "'),
    Column("state", "str", "", _STATE,
           "the pass of a `--states` sweep the job is in: `empty` or `full` (the job id ends in "
           "`.empty` / `.full`); NA otherwise. In such a sweep `drive_state` is the state the "
           "run's recorded step reached (`status.state_step` → `state.json` with `ok`), or "
           '"unknown" when there is none'),
    Column("steady_state", "boolean", "", _STATE,
           "`steady.json` `attained`: the job's IOPS reached steady state by the PTS rule in its "
           "rounds; for a PTS test, its group's `rounds.json` `attained`. NA without workload "
           "preconditioning or rounds"),
    Column("ss_rounds", "Int64", "rounds", _STATE,
           "the number of values in `steady.json` `rounds_iops` (or a PTS group's `rounds.json` "
           "`rounds`): rounds run until steady, or until the limit"),
    Column("pts_test", "str", "", _STATE,
           "for a SNIA PTS test (`manifest.suite.pts.test`): `iops`, `throughput`, `latency`, "
           "`wsat`, `hir`, `xsr` or `dirth`; None for other suites"),
    Column("pts_group", "str", "", _STATE,
           "the PTS group the job runs in (`manifest.suite.pts.groups[].name`): its rounds "
           "are in `rounds/<device>/<group>/`, the run's `repeat` is its round"),
    Column("ss_window", "boolean", "", _STATE,
           "a PTS test's run is in its group's measurement window (`rounds.json` `window` holds "
           "its round): the rounds a PTS figure is averaged over; false for the rounds before "
           "(`job_summary` leaves them out), NA for other suites, groups without rounds and a "
           "group that ended (a round failed) before any round gave its figure: its rounds "
           "stand"),
    Column("purge", "str", "", _STATE,
           "how the drive was purged before a PTS test (`rounds/<device>/purge.json`): "
           "`discard`, `nvme-format` or `nvme-sanitize`, or `not purged` (the sweep was not "
           "given `--destroy-data` for it or was given `--purge none`, or the purge failed and "
           "the run was skipped: the record's `detail` says why); NA for other suites, for "
           "a PTS test that purges nothing (`pts.purge: false`) and where `purge.json` is "
           "missing or cannot be read (the report then says \"purge record unreadable\" and "
           "why)"),
    Column("scale", "float", "× the test's times", _STATE,
           "`manifest.suite.scale`: the factor `--scale` multiplied the test's times by, its "
           "size caps kept whole (a first look, no PTS result); NA when not scaled"),
    Column("bursts", "Int64", "", _BURSTS,
           "the bursts found: an I/O issued (completion − latency) more than half the idle gap "
           "after the previous completion starts a new one"),
    Column("burst_iops", "float", "I/Os per second", _BURSTS,
           "each fio process's I/Os over its bursts' summed duration (first issue to last "
           "completion of each), added over processes"),
    Column("burst_bw_bytes", "float", "bytes per second", _BURSTS,
           "their bytes over the same time"),
    Column("burst_duty_pct", "float", "%", _BURSTS,
           "the bursts' time over the time from the first issue to the last completion, per "
           "process; the mean over processes"),
    Column("suite", "str", "", _STATUS,
           "`manifest.suite.name`"),
    Column("workload_hash", "str", "", _WORKLOAD,
           "`status.workload_hash` (see [status.json](#statusjson))"),
    Column("model", "str", "", _STATUS,
           "`manifest.devices[].model`, for the entry whose `name` is `device`"),
    Column("firmware", "str", "", _STATUS,
           "`manifest.devices[].firmware`"),
    Column("size_bytes", "float", "bytes", _STATUS,
           "`manifest.devices[].size_bytes`: the device's capacity or the file's size"),
    Column("transport", "str", "", _STATUS,
           "`manifest.devices[].transport`"),
    Column("rotational", "boolean", "", _STATUS,
           "`manifest.devices[].rotational`"),
    Column("scheduler", "str", "", _STATUS,
           "`manifest.devices[].scheduler`: the I/O scheduler in use"),
    Column("target_kind", "str", "", _STATUS,
           "`manifest.devices[].kind`: `block` or `file`"),
    Column("fio_version", "str", "", _STATUS,
           "`manifest.host.fio_version`, e.g. `fio-3.33`"),
    Column("started_at", "str", "ISO 8601, UTC", _STATUS,
           "`status.started_at`"),
    Column("sweep", "str", "", _STATUS,
           "the results folder, as given to `load()`"),
    Column("fio_json", "str", "", _STATUS,
           "`<sweep>/runs/<device>/<job>/r<N>/fio.json`; None when the run has none (a run failed "
           "because of that file still names it)"),
    # what the probes read around each run (ssdcompare.target.probes), in their order
    *(Column(c.name, c.type, c.unit, _PROBES, c.source) for c in probe_columns()),
    Column("io_check", "str", "", _PROBES,
           "fio's count of the run's I/O against the block layer's "
           "([methodology.md](methodology.md#the-block-layers-count)): `ok` when nothing the "
           "device counted contradicts fio (with direct I/O on a block device: it moved the "
           "bytes and completed the requests fio counted); `shared` (the device moved more: "
           "another process used it; the verdict is `disturbed`), `cached` (less, through the "
           "page cache: the verdict is `host`), `unwritten` (less read from a file whose blocks"
           " were never written: `host`), `elsewhere` (less, or fewer requests, with direct "
           "I/O: not this device's output; `disturbed`). None when either count is unknown (no"
           " `probes.json`, a target on another host or on a filesystem without a block "
           "device), and on a group member's rows (the group's rows carry its check)"),
    Column("io_check_reason", "str", "", _PROBES,
           "when not `ok`: the two counts and what the difference means, in words"),
    Column("label", "str", "", _ID,
           "computed: the unit compared in tables. It is `device`, as `host:device` when the frame"
           " holds several hosts, and with ` @<folder name>` added when the same device appears in"
           " several sweeps", stored=False),
)
# fmt: on

COLUMNS = [column.name for column in FRAME_COLUMNS if column.stored]
FLOAT_COLUMNS = [column.name for column in FRAME_COLUMNS if column.type == "float"]
INT_COLUMNS = [column.name for column in FRAME_COLUMNS if column.type == "Int64"]
BOOLEAN_COLUMNS = [column.name for column in FRAME_COLUMNS if column.type == "boolean"]
TEXT_COLUMNS = [column.name for column in FRAME_COLUMNS if column.type == "str" and column.stored]
BY_NAME = {column.name: column for column in FRAME_COLUMNS}


def markdown_table(section: str) -> str:
    """The docs' table of one section's columns."""
    lines = ["| column | type | unit | source |", "|---|---|---|---|"]
    for column in FRAME_COLUMNS:
        if column.section == section:
            unit = f" {column.unit} " if column.unit else " "
            lines.append(f"| `{column.name}` | {column.type} |{unit}| {column.source} |")
    return "\n".join(lines)


def with_tables(text: str) -> str:
    """`text` (docs/results-format.md) with the load() section's tables made anew from the
    registry: each table right under a `### <section>` heading is replaced."""
    head, found, rest = text.partition(LOAD_HEADING)
    if not found:
        raise ValueError(f"no {LOAD_HEADING!r} in the text")
    section_end = rest.find("\n## ")
    body, tail = (rest, "") if section_end < 0 else (rest[:section_end], rest[section_end:])
    lines = body.split("\n")
    out: list[str] = []
    index = 0
    while index < len(lines):
        line = lines[index]
        out.append(line)
        index += 1
        name = line[4:].strip() if line.startswith("### ") else None
        if name not in SECTIONS:
            continue
        while index < len(lines) and not lines[index].startswith("|"):
            out.append(lines[index])  # what comes between the heading and its table
            index += 1
        while index < len(lines) and lines[index].startswith("|"):
            index += 1  # the old table
        out.append(markdown_table(name))
    return head + found + "\n".join(out) + tail


def main(argv: list[str]) -> int:
    """Write the tables into the docs file named (docs/results-format.md)."""
    if len(argv) != 1:
        print(
            "usage: python -m ssdcompare.analysis.columns docs/results-format.md", file=sys.stderr
        )
        return 2
    path = Path(argv[0])
    path.write_text(with_tables(path.read_text(encoding="utf-8")), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
