"""Probes read while a run goes on (a probe's `watch`, see ssdcompare.target.probes.probe).

One thread per run reads every watching probe at its own pace (`Probe.every_s`), the first
reading one period after the run starts: the snapshot before the run has just read the same
thing. The watch never fails or delays a run: a reader that raises is recorded once and
not called again, and stopping waits at most STOP_WAIT_S for a reading under way (one that
comes back later is dropped). The thread is a daemon: a reader stuck in the kernel cannot
keep ssdcompare from ending.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ssdcompare.target.devices import Target
from ssdcompare.target.probes.probe import Probe, Sample, Watcher

STOP_WAIT_S = 0.5  # how long stopping waits for a reading under way
# per probe: at one reading every 5 s, close to 3 hours before readings are merged in pairs
# (keeping each number's highest value: a temperature's peak stays), so a run of days keeps
# a probes.json well under what its reader takes
MAX_SAMPLES = 2_000


class Watch:
    """The readings of `probes` (those that watch) on `target` while a run goes on, in
    seconds since `since` (the snapshot before the run, on `clock`)."""

    def __init__(
        self,
        target: Target,
        probes: Sequence[Probe],
        since: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._target = target
        self._probes = [probe for probe in probes if probe.watch is not None]
        self._since = since
        self._clock = clock
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._samples: dict[str, list[Sample]] = {probe.name: [] for probe in self._probes}
        self._thread = threading.Thread(target=self._run, name="ssdcompare-probe-watch",
                                        daemon=True)  # fmt: skip

    def start(self) -> None:
        """Begin watching (nothing happens when no probe watches)."""
        if self._probes:
            self._thread.start()

    def stop(self) -> dict[str, list[Sample]]:
        """Stop watching; every watching probe's readings so far."""
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(STOP_WAIT_S)
        with self._lock:
            return {name: list(samples) for name, samples in self._samples.items()}

    def _run(self) -> None:
        readers: dict[str, Watcher] = {}
        due: dict[str, float] = {}
        for probe in self._probes:
            assert probe.watch is not None
            reader = self._guarded(probe.name, functools.partial(probe.watch, self._target))
            if callable(reader):
                readers[probe.name] = reader
                due[probe.name] = self._since + probe.every_s
        every = {probe.name: probe.every_s for probe in self._probes}
        while readers and not self._stop.is_set():
            name = min(due, key=due.__getitem__)
            if self._stop.wait(max(due[name] - self._clock(), 0.0)):
                return
            taken = self._clock()
            reading = self._guarded(name, readers[name])
            due[name] = taken + every[name]
            if reading is _FAILED:
                del readers[name], due[name]
            elif reading is not None:
                self._keep(name, {"t_s": round(taken - self._since, 3), "reading": reading})

    def _guarded(self, name: str, call: Callable[[], Any]) -> Any:
        """`call`'s answer; _FAILED (and the error kept as a reading) when it raises."""
        try:
            return call()
        except Exception as err:  # noqa: BLE001 - a probe never fails a run
            self._keep(name, {"t_s": round(self._clock() - self._since, 3),
                              "error": f"{type(err).__name__}: {err}"})  # fmt: skip
            return _FAILED

    def _keep(self, name: str, sample: Sample) -> None:
        if self._stop.is_set():
            return  # the run has ended: a reading that came back late is not the run's
        with self._lock:
            samples = self._samples[name]
            samples.append(sample)
            if len(samples) > MAX_SAMPLES:
                samples[:] = [_merged(samples[i : i + 2]) for i in range(0, len(samples), 2)]


_FAILED = object()


def _merged(pair: list[Sample]) -> Sample:
    """Two readings as one: the later one's time, and each number the highest of the two
    (in readings that are dicts of numbers, or of dicts of numbers)."""
    if len(pair) == 1:
        return pair[0]
    first, second = pair
    if "reading" not in first or "reading" not in second:
        return second if "reading" in second else first  # an error kept beside a reading
    return {**second, "reading": _highest(first["reading"], second["reading"])}


def _highest(one: Any, other: Any) -> Any:
    if isinstance(one, dict) and isinstance(other, dict):
        return {
            key: _highest(one[key], value) if key in one else value for key, value in other.items()
        } | {k: v for k, v in one.items() if k not in other}
    numbers = (int, float)
    if isinstance(one, numbers) and isinstance(other, numbers) and not isinstance(one, bool):
        return max(one, other)
    return other


@contextlib.contextmanager
def watching(
    target: Target, probes: Sequence[Probe], since: float
) -> Iterator[Callable[[], dict[str, list[Sample]]]]:
    """Watch `target` with `probes` while the block runs; gives a function returning the
    readings (call it after the block: the watch has stopped by then)."""
    watch = Watch(target, probes, since)
    watch.start()
    found: dict[str, list[Sample]] = {}
    try:
        yield lambda: found
    finally:
        found.update(watch.stop())
