"""Sampling the CPU while fio runs: per-CPU busy shares and the CPU use of each fio worker.

fio's own usr_cpu/sys_cpu covers only its job threads; interrupt and softirq work, kernel
workers (loop, zram, io_uring SQPOLL) and other processes are invisible to it. A background
thread samples /proc at >= 10 Hz so a CPU limit can be seen whatever its cause. It reads the
few /proc files it needs itself, through descriptors kept open between samples, rather than
through psutil: the sampler shares the CPUs with fio, so its own cost is kept small.
The samples make a CpuTrace (ssdcompare.judge.cpu), which the runner stores as cpu.json.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import psutil

from ssdcompare.judge.cpu import CATEGORIES, CpuSample, CpuTrace

# Refresh the list of fio's processes every sample at first (workers fork at start-up), then
# only every Nth sample: scanning /proc is the sampler's largest cost.
_EARLY_REFRESH_S = 2.0
# a fio server forks a job's processes only after the client has connected and sent it
_EARLY_REFRESH_SERVER_S = 10.0
_LATE_REFRESH_EVERY = 10
# Other processes' CPU use (not fio, not ssdcompare, not kernel threads) is read from every
# /proc/<pid>/stat every this many samples: a busy neighbour disturbs a measurement.
_OTHERS_EVERY = 10
# Which CPU each fio thread is on is looked at every this many samples (one read a thread):
# enough to see where the scheduler keeps them, at a fifth of the cost of every sample.
_CPU_LOOK_EVERY = 5
_PF_KTHREAD = 0x00200000  # /proc/<pid>/stat flags: a kernel thread
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
_SCHEDSTAT = os.path.exists("/proc/self/schedstat")  # a kernel with CONFIG_SCHED_INFO


def _kept_files(most: int = 256) -> int:
    """How many /proc files to keep open at most: a job with hundreds of threads must not use
    up the descriptors the runner needs (files beyond it are opened for each read)."""
    try:
        import resource

        soft = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    except (ImportError, OSError, ValueError):
        return most
    return most if soft == resource.RLIM_INFINITY else max(min(most, soft // 4), 0)


_KEPT_FILES = _kept_files()


class _Times(NamedTuple):
    """CPU seconds, as psutil.Process.cpu_times() gives them."""

    user: float
    system: float


class _ThreadTimes(NamedTuple):
    """One thread's CPU seconds, as psutil.Process.threads() gives them."""

    id: int
    user_time: float
    system_time: float


def parse_cpu_lines(data: bytes) -> list[tuple[int, ...]]:
    """Each CPU's times from /proc/stat (its cpuN lines, not the sum over all CPUs), in ticks,
    CATEGORIES in order; a column an old kernel does not write is 0."""
    return parse_cpu_stat(data)[1]


def parse_cpu_stat(data: bytes) -> tuple[list[int], list[tuple[int, ...]]]:
    """The CPUs of /proc/stat's cpuN lines: their numbers (an offline CPU has no line, so the
    third line may be CPU 3) and their times, as parse_cpu_lines gives them."""
    # the cpu lines come first; the rest (intr with a figure per interrupt, ...) is not needed
    end = data.find(b"\nintr")
    found = []
    numbers = []
    for line in (data[:end] if end >= 0 else data).split(b"\n"):
        if line[:3] != b"cpu" or line[3:4] == b" ":  # "cpu " sums all CPUs
            if found:
                break
            continue
        v = line.split()
        numbers.append(int(v[0][3:]))
        if len(v) < 9:
            v += [b"0"] * (9 - len(v))
        # user nice system idle iowait irq softirq steal, in CATEGORIES order; guest and
        # guest_nice are left out: the kernel counts them inside user and nice already
        found.append((int(v[1]), int(v[2]), int(v[3]), int(v[6]), int(v[7]), int(v[5]),
                      int(v[8]), int(v[4])))  # fmt: skip
    return numbers, found


def parse_stat(data: bytes) -> tuple[str, list[bytes]]:
    """A /proc/<pid>/stat line: the process's name and the fields after it (the first being
    the state, field 3 of proc(5)) up to stime, field 15; the last item holds the rest."""
    # the name is in parentheses and may itself hold spaces or parentheses
    start, end = data.find(b"("), data.rfind(b")")
    if start < 0 or end < start:
        raise ValueError(f"not a /proc stat line: {data[:80]!r}")
    return data[start + 1 : end].decode("utf-8", "replace"), data[end + 2 :].split(None, 13)


def _stat_seconds(fields: list[bytes]) -> tuple[float, float]:
    """(user, system) CPU seconds from the fields parse_stat returns."""
    return int(fields[11]) / _TICKS, int(fields[12]) / _TICKS


def _read_once(path: str, size: int = 4096) -> bytes:
    fd = os.open(path, os.O_RDONLY)
    try:
        return os.read(fd, size)
    finally:
        os.close(fd)


class ProcFiles:
    """Reads /proc files straight from the kernel, keeping a descriptor open per file between
    reads: a read at offset 0 (pread) makes the kernel write the file anew, which saves an
    open and a close per read. A file whose process or thread is gone raises OSError (ENOENT
    or ESRCH) and is closed. Also the scans of /proc built on them: CPU times, the
    descendants of a process, the other processes."""

    def __init__(self, keep: int = _KEPT_FILES) -> None:
        self._keep = keep
        self._fds: dict[str, int] = {}
        self._stat_size = 4096
        self._ppids: dict[int, int] = {}  # pid -> parent pid, from the last scan of /proc
        self._children: dict[int, list[int]] = {}  # the same: parent pid -> pids
        self._scanned_at: int | None = None  # last_pid() before that scan
        self._last_pid: int | None = None
        self._kernel: set[int] = set()  # kernel threads seen by the last scan of /proc
        self._others: set[int] = set()  # the pids that scan listed
        self.cpu_numbers: list[int] = []  # the CPUs of the last cpu_times(), in its order

    def read(self, path: str, size: int = 1024, spare: bool = False) -> bytes:
        """The file's text; a `spare` file (one of the other processes') is kept open only
        while half the descriptors allowed are free, so fio's threads always find some."""
        fd = self._fds.get(path)
        if fd is None:
            fd = os.open(path, os.O_RDONLY)
            if len(self._fds) >= (self._keep // 2 if spare else self._keep):
                try:
                    return os.read(fd, size)
                finally:
                    os.close(fd)
            self._fds[path] = fd
        try:
            return os.pread(fd, size, 0)
        except OSError:
            self.drop(path)
            raise

    def links(self, path: str) -> int:
        """The link count of a /proc folder, through a kept descriptor."""
        fd = self._fds.get(path)
        if fd is None:
            if len(self._fds) >= self._keep:
                return os.stat(path).st_nlink
            fd = self._fds[path] = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            return os.fstat(fd).st_nlink
        except OSError:
            self.drop(path)
            raise

    def drop(self, path: str) -> None:
        fd = self._fds.pop(path, None)
        if fd is not None:
            os.close(fd)

    def close(self) -> None:
        fds, self._fds = self._fds, {}
        for fd in fds.values():
            os.close(fd)

    def cpu_times(self) -> list[tuple[int, ...]]:
        """Each CPU's times in ticks (CATEGORIES in order), from /proc/stat."""
        while True:
            data = self.read("/proc/stat", self._stat_size)
            # only the cpu lines at its start are needed; read more when they are cut off
            if len(data) < self._stat_size or b"\nintr" in data:
                self.cpu_numbers, times = parse_cpu_stat(data)
                return times
            self._stat_size *= 2

    def new_sample(self) -> None:
        """A sample begins: last_pid() reads the kernel's figure again."""
        self._last_pid = None

    def last_pid(self) -> int | None:
        """The pid the kernel gave last (/proc/loadavg), read once per sample: while it stays
        the same no process or thread was started anywhere, so a list of them read since
        still holds."""
        if self._last_pid is None:
            try:
                self._last_pid = int(self.read("/proc/loadavg", 128).split()[4])
            except (OSError, ValueError, IndexError):
                return None
        return self._last_pid

    def processor(self, pid: int, tid: int) -> int | None:
        """The CPU a thread last ran on (field 39 of /proc/<pid>/task/<tid>/stat); None when
        the thread is gone or the field cannot be read."""
        try:
            data = self.read(f"/proc/{pid}/task/{tid}/stat")
            return int(data[data.rfind(b")") + 2 :].split()[36])
        except (OSError, ValueError, IndexError):
            return None

    def process(self, pid: int) -> ProcProcess:
        return ProcProcess(self, pid)

    def descendants(self, root: int, recursive: bool = True) -> list[int]:
        """The pids of `root`'s children, their children and so on (only the children when
        not `recursive`; some may have ended since). /proc is scanned again only when a
        process was started since the last scan, and a pid's parent is read from
        /proc/<pid>/stat only the first time the pid is seen: a process keeps its parent
        while that lives, and fio's workers are gone before fio."""
        mark = self.last_pid()
        if mark is None or mark != self._scanned_at:
            try:
                pids = [int(entry) for entry in os.listdir("/proc") if entry.isdigit()]
            except OSError:
                return []
            known, ppids = self._ppids, {}
            for pid in pids:
                ppid = known.get(pid)
                if ppid is None:
                    try:
                        ppid = int(parse_stat(_read_once(f"/proc/{pid}/stat"))[1][1])
                    except (OSError, ValueError, IndexError):
                        continue
                ppids[pid] = ppid
            self._ppids, self._scanned_at = ppids, mark
            self._children = {}
            for pid, ppid in ppids.items():
                self._children.setdefault(ppid, []).append(pid)
        found, queue = [], [root]
        while queue:
            kids = self._children.get(queue.pop(), [])
            found += kids
            if recursive:
                queue += kids
        return found

    def user_processes(self) -> dict[int, tuple[str, float]]:
        """pid -> (name, CPU seconds) of every process but kernel threads, from
        /proc/<pid>/stat. A pid found to be a kernel thread is not read again while it is
        listed."""
        found: dict[int, tuple[str, float]] = {}
        try:
            pids = [int(entry) for entry in os.listdir("/proc") if entry.isdigit()]
        except OSError:
            return found
        kernel = self._kernel
        self._kernel = {pid for pid in pids if pid in kernel}
        for pid in self._others.difference(pids):
            self.drop(f"/proc/{pid}/stat")  # the process ended
        self._others = set(pids)
        for pid in pids:
            if pid in kernel:
                continue
            try:
                name, fields = parse_stat(self.read(f"/proc/{pid}/stat", spare=True))
                flags = int(fields[6])
                user, system = _stat_seconds(fields)
            except (OSError, ValueError, IndexError):
                continue
            if flags & _PF_KTHREAD:
                self._kernel.add(pid)
                self.drop(f"/proc/{pid}/stat")
                continue
            found[pid] = (name, user + system)
        return found


class ProcProcess:
    """A process read straight from /proc: what the sampler asks of psutil.Process (pid,
    name, children, cpu_times), its threads' CPU seconds and runnable seconds.
    Raises ProcessLookupError once the process is gone (its name is read when first asked:
    a refresh makes one of these for every descendant, tracked already or not).

    A thread's CPU seconds come from /proc/<pid>/task/<tid>/schedstat where the kernel
    writes it: its first figure is the time on a CPU that the user and system times of
    .../stat add up to, in nanoseconds rather than clock ticks, and its first two make the
    runnable time, so one read per thread gives both."""

    def __init__(self, files: ProcFiles, pid: int) -> None:
        self.pid = pid
        self._files = files
        self._tids: list[int] = []
        self._listed_at: int | None = None  # ProcFiles.last_pid() before the last listing
        self._counted = False  # the task folder's link count agreed with the last listing
        self._runnable: dict[int, float] = {}  # tid -> runnable seconds at the last read
        self._name: str | None = None

    def name(self) -> str:
        if self._name is None:
            self._name = _process_name(self.pid)
        return self._name

    def children(self, recursive: bool = False) -> list[ProcProcess]:
        pids = self._files.descendants(self.pid, recursive)
        return [ProcProcess(self._files, pid) for pid in pids]

    def thread_seconds(self) -> list[tuple[int, float]]:
        """(thread id, CPU seconds) of each thread."""
        # The threads are listed again only when the last listing may be out of date: a task
        # was started somewhere since, and the process has not as many threads as listed (a
        # count its task folder's link count gives in one call), or a listed one has ended.
        mark = self._files.last_pid()
        listed = len(self._tids)
        unchanged = mark is not None and mark == self._listed_at
        if listed and (unchanged or self._counted and self._thread_count() == listed):
            found = self._read_threads()
            if len(found) == listed:
                self._listed_at = mark
                return found
        self._list_threads(mark)
        return self._read_threads()

    def threads(self) -> list[_ThreadTimes]:
        """As psutil.Process.threads() (the time on a CPU counted as user time)."""
        return [_ThreadTimes(tid, seconds, 0.0) for tid, seconds in self.thread_seconds()]

    def _list_threads(self, mark: int | None) -> None:
        count = self._thread_count()
        try:
            tids = [int(tid) for tid in os.listdir(f"/proc/{self.pid}/task")]
        except FileNotFoundError:
            self.close()
            raise ProcessLookupError(self.pid) from None
        for tid in set(self._tids).difference(tids):
            self._forget(tid)  # the thread ended
        self._tids, self._listed_at = tids, mark
        # the link count stands for the listing only where the two agreed
        self._counted = count == len(tids)

    def _thread_count(self) -> int | None:
        """The process's number of threads: Linux gives its task folder two links plus one
        per thread."""
        try:
            return self._files.links(f"/proc/{self.pid}/task") - 2
        except OSError:
            return None

    def _read_threads(self) -> list[tuple[int, float]]:
        found = []
        self._runnable = {}
        for tid in self._tids:
            try:
                if _SCHEDSTAT:
                    data = self._files.read(f"/proc/{self.pid}/task/{tid}/schedstat", 128)
                    on_cpu, waiting = data.split()[:2]
                    seconds = int(on_cpu) / 1e9
                    self._runnable[tid] = (int(on_cpu) + int(waiting)) / 1e9
                else:
                    data = self._files.read(f"/proc/{self.pid}/task/{tid}/stat")
                    seconds = sum(_stat_seconds(parse_stat(data)[1]))
            except (OSError, ValueError, IndexError):
                self._forget(tid)  # the thread ended since the listing
                continue
            found.append((tid, seconds))
        if len(found) < len(self._tids):
            self._tids = [tid for tid, _ in found]
        return found

    def cpu_times(self) -> _Times:
        try:
            return _Times(*_stat_seconds(parse_stat(_read_once(f"/proc/{self.pid}/stat"))[1]))
        except FileNotFoundError:
            raise ProcessLookupError(self.pid) from None

    def runnable_seconds(self, tid: int) -> float | None:
        """Seconds the thread has been runnable (see _schedstat_seconds) as of the last
        thread_seconds(), which read them."""
        seconds = self._runnable.get(tid)
        return seconds if seconds is not None else _schedstat_seconds(self.pid, tid)

    def close(self) -> None:
        for tid in self._tids:
            self._forget(tid)
        self._tids = []
        self._files.drop(f"/proc/{self.pid}/task")

    def _forget(self, tid: int) -> None:
        self._files.drop(f"/proc/{self.pid}/task/{tid}/schedstat")
        self._files.drop(f"/proc/{self.pid}/task/{tid}/stat")


def _process_name(pid: int) -> str:
    """The name psutil.Process.name() gives: the kernel's (cut at 15 characters), or the
    program's own name when that starts with it."""
    try:
        name = parse_stat(_read_once(f"/proc/{pid}/stat"))[0]
    except FileNotFoundError:
        raise ProcessLookupError(pid) from None
    if len(name) >= 15:
        try:
            program = _read_once(f"/proc/{pid}/cmdline", 4096).split(b"\0")[0]
        except OSError:
            return name
        full = os.path.basename(program.decode("utf-8", "replace"))
        if full.startswith(name):
            return full
    return name


def _cpu_fields(times: Any) -> list[float]:
    # psutil on Linux counts guest time inside user and nice already: leave guest out
    return [float(getattr(times, name, 0.0)) for name in CATEGORIES]


def _shares(before: list[Sequence[float]], after: list[Sequence[float]]) -> list[list[float]]:
    result = []
    for old, new in zip(before, after, strict=False):
        deltas = [max(b - a, 0) for a, b in zip(old, new, strict=True)]
        total = sum(deltas)
        if total <= 0:
            result.append([0.0] * (len(CATEGORIES) - 1) + [100.0])
        else:
            result.append([round(d / total * 100, 1) for d in deltas])
    return result


class CpuSampler:
    """Samples CPU use in a background thread between start(root_pid) and stop().

    Inject `cpu_times` (per-CPU times, like psutil.cpu_times(percpu=True)), `process`
    (pid -> psutil.Process-like), `schedstat` ((pid, tid) -> seconds runnable, or None),
    `others` (pid -> (name, CPU seconds) of every process), `processor` ((pid, tid) -> the
    CPU the thread last ran on, or None) and `clock` to drive it deterministically in tests.
    By default all of them read /proc directly (`processor` only with the default
    `process`: a given process is no real one to look up).
    """

    def __init__(
        self,
        interval_s: float = 0.1,
        clock: Callable[[], float] = time.monotonic,
        cpu_times: Callable[[], list[Any]] | None = None,
        process: Callable[[int], Any] | None = None,
        schedstat: Callable[[int, int], float | None] | None = None,
        others: Callable[[], dict[int, tuple[str, float]]] | None = None,
        processor: Callable[[int, int], int | None] | None = None,
    ) -> None:
        self.interval_s = interval_s
        self._clock = clock
        self._files = ProcFiles()
        # /proc/stat names each CPU's line; given CPU times are taken as CPU 0, 1, ...
        self._numbered = cpu_times is None
        if cpu_times is None:
            self._cpu_times: Callable[[], list[Sequence[float]]] = self._files.cpu_times
        else:
            self._cpu_times = lambda: [_cpu_fields(times) for times in cpu_times()]
        self._process = process if process is not None else self._files.process
        if processor is None and process is None:
            processor = self._files.processor
        self._processor = processor
        self._threads_seen: list[tuple[int, int]] = []  # (pid, tid) read by the last sample
        self._cpus_seen: set[int] = set()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._trace: CpuTrace | None = None
        self._root_pid: int | None = None
        self._servers: tuple[int, ...] = ()
        self._tracked: dict[int, Any] = {}  # pid -> process
        self._thread_seconds: dict[int, float] = {}  # tid -> CPU seconds at the last sample
        self._thread_runnable: dict[int, float] = {}  # tid -> schedstat run + wait seconds
        self._schedstat = schedstat
        self._others = others if others is not None else self._files.user_processes
        self._others_seconds: dict[int, tuple[str, float]] = {}  # pid -> (name, CPU seconds)
        self._others_at = 0.0
        self._started = 0.0
        self._last = 0.0
        # a worker ended: the next section's may start soon (fio's stonewall), looked for
        # at every sample until then
        self._refresh_until = 0.0
        self._last_times: list[Sequence[float]] = []
        self._count = 0

    def start(self, root_pid: int | None = None, *servers: int) -> None:
        """Begin sampling; `root_pid` is fio's main process (its children are the workers).
        `servers` are the pids of local fio servers a client `root_pid` runs its jobs on:
        their children are the workers then."""
        self._root_pid = root_pid
        self._servers = servers
        self._started = self._last = self._clock()
        self._last_times = self._cpu_times()
        self._trace = CpuTrace(interval_s=self.interval_s, cpu_count=len(self._last_times))
        if self._numbered:
            self._trace.cpu_numbers = list(self._files.cpu_numbers)
        self._refresh_workers()
        self._others_seconds, self._others_at = self._others(), self._started
        self._thread = threading.Thread(target=self._loop, name="ssdcompare-cpu", daemon=True)
        self._thread.start()

    def stop(self) -> CpuTrace:
        """Stop sampling and return the trace (safe to call more than once)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
            alive, self._thread = self._thread.is_alive(), None
            if not alive:  # else the thread closes the files when it ends
                self._files.close()
        else:
            self._files.close()
        if self._trace is None:
            self._trace = CpuTrace(interval_s=self.interval_s, cpu_count=0)
        return self._trace

    def sample_once(self) -> None:
        """Take one sample now (the thread calls this each interval; tests call it directly)."""
        assert self._trace is not None, "start() first"
        self._files.new_sample()
        now = self._clock()
        times = self._cpu_times()
        wall = now - self._last
        if wall <= 0:
            return
        t_s = round(now - self._started, 3)
        workers, runnable = self._worker_shares(wall, t_s)
        sample = CpuSample(
            t_s=t_s,
            cpus=_shares(self._last_times, times),
            workers=workers,
            runnable=runnable,
        )
        self._last, self._last_times = now, times
        self._count += 1
        if self._count % _OTHERS_EVERY == 0:
            sample.others_pct, sample.others_top = self._other_processes(now)
        self._trace.samples.append(sample)
        if self._processor is not None and self._count % _CPU_LOOK_EVERY == 1:
            self._note_cpus()
        window = _EARLY_REFRESH_SERVER_S if self._servers else _EARLY_REFRESH_S
        early = now - self._started < window or now < self._refresh_until
        if early or self._count % _LATE_REFRESH_EVERY == 0:
            self._refresh_workers(t_s)

    def _loop(self) -> None:
        assert self._trace is not None
        cpu_start, wall_start = time.thread_time(), time.monotonic()
        try:
            while not self._stop.wait(self.interval_s):
                try:
                    self.sample_once()
                except Exception:  # a collector never fails the run: count and go on
                    self._trace.errors += 1
        finally:
            self._files.close()  # samples taken by hand after this open them again
        wall = time.monotonic() - wall_start
        if wall > 0:
            self._trace.sampler_cpu_pct = round((time.thread_time() - cpu_start) / wall * 100, 2)

    def _note_cpus(self) -> None:
        """Add the CPUs fio's threads are on now to the trace's `worker_cpus`."""
        assert self._trace is not None and self._processor is not None
        for pid, tid in self._threads_seen:
            cpu = self._processor(pid, tid)
            if cpu is not None:
                self._cpus_seen.add(cpu)
        self._trace.worker_cpus = sorted(self._cpus_seen)

    def _other_processes(self, now: float) -> tuple[float | None, str | None]:
        """CPU used since the last look by processes that are neither fio's nor ours, in %
        of one core, and the busiest of them in words."""
        current = self._others()
        wall = now - self._others_at
        before, self._others_seconds, self._others_at = self._others_seconds, current, now
        if wall <= 0:
            return None, None
        ours = {os.getpid(), *self._tracked}
        used = {
            pid: (name, seconds - before[pid][1])
            for pid, (name, seconds) in current.items()
            if pid in before and pid not in ours and seconds >= before[pid][1]
        }  # fmt: skip
        total = sum(delta for _, delta in used.values()) / wall * 100
        top = max(used.items(), key=lambda item: item[1][1], default=None)
        words = None
        if top is not None and top[1][1] > 0:
            words = f"{top[1][0]} (pid {top[0]}) {top[1][1] / wall * 100:.0f} %"
        return round(total, 1), words

    def _refresh_workers(self, t_s: float = 0.0) -> None:
        if self._root_pid is None or self._trace is None:
            return
        found = []
        for pid in (self._root_pid, *self._servers):
            try:
                root = self._tracked.get(pid) or self._process(pid)
                found += [root, *root.children(recursive=True)]
            except (psutil.Error, OSError):
                continue
        for proc in found:
            if proc.pid in self._tracked:
                continue
            try:
                name = proc.name()
                threads = _threads(proc)
            except (psutil.Error, OSError):
                continue
            self._tracked[proc.pid] = proc
            if proc.pid not in (self._root_pid, *self._servers):
                self._trace.worker_spans[str(proc.pid)] = [t_s, t_s]
            for tid, seconds in threads:
                self._thread_seconds[tid] = seconds
                self._note_runnable(proc, tid)
                self._trace.worker_names[str(tid)] = name

    def _note_runnable(self, proc: Any, tid: int) -> float | None:
        """Record the thread's runnable seconds; return how many passed since last time."""
        if self._schedstat is not None:
            now = self._schedstat(proc.pid, tid)
        else:
            reader = getattr(proc, "runnable_seconds", None)
            now = reader(tid) if reader is not None else _schedstat_seconds(proc.pid, tid)
        if now is None:
            return None
        before = self._thread_runnable.get(tid)
        self._thread_runnable[tid] = now
        return None if before is None else max(now - before, 0.0)

    def _worker_shares(self, wall: float, t_s: float) -> tuple[dict[str, float], dict[str, float]]:
        shares: dict[str, float] = {}
        runnable: dict[str, float] = {}
        assert self._trace is not None
        self._threads_seen = []
        for pid, proc in list(self._tracked.items()):
            try:
                threads = _threads(proc)
                name = None
            except (psutil.Error, OSError):
                del self._tracked[pid]  # the worker exited
                self._refresh_until = self._clock() + _EARLY_REFRESH_S
                close = getattr(proc, "close", None)
                if close is not None:
                    close()
                continue
            span = self._trace.worker_spans.get(str(pid))
            if span is not None:
                span[1] = t_s
            for tid, used in threads:
                self._threads_seen.append((pid, tid))
                before = self._thread_seconds.get(tid)
                self._thread_seconds[tid] = used
                waited = self._note_runnable(proc, tid)
                if waited is not None and before is not None:
                    runnable[str(tid)] = round(min(waited / wall * 100, 100.0), 1)
                if before is None:  # a thread started since the last sample: next time
                    if name is None:
                        name = self._trace.worker_names.get(str(pid)) or _name(proc)
                    self._trace.worker_names[str(tid)] = name
                    continue
                shares[str(tid)] = round(max(used - before, 0.0) / wall * 100, 1)
        return shares, runnable


def _schedstat_seconds(pid: int, tid: int) -> float | None:
    """Seconds a thread has been runnable: on a CPU plus waiting in a run queue (Linux
    /proc/<pid>/task/<tid>/schedstat; None where the kernel does not keep it)."""
    try:
        on_cpu, waiting = _read_once(f"/proc/{pid}/task/{tid}/schedstat", 128).split()[:2]
        return (int(on_cpu) + int(waiting)) / 1e9
    except (OSError, ValueError):
        return None


def _threads(proc: Any) -> list[tuple[int, float]]:
    """(thread id, CPU seconds) for each thread of a process; the process as one thread where
    its threads cannot be read."""
    try:
        direct = getattr(proc, "thread_seconds", None)
        if direct is not None:
            return direct()
        return [(t.id, t.user_time + t.system_time) for t in proc.threads()]
    except (AttributeError, PermissionError, psutil.AccessDenied):
        times = proc.cpu_times()
        return [(proc.pid, times.user + times.system)]


def _name(proc: Any) -> str:
    try:
        return str(proc.name())
    except (psutil.Error, OSError):
        return "?"
