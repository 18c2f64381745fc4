"""What a sweep shows on the terminal: a progress line, notices, and messages that survive a
closed terminal.

On a terminal, one status line updates in place and failures get lines of their own. When
stderr is not a terminal (a pipe, a log file, cron), every finished run gets one plain line,
so a FAILED or skipped run is never lost from the log.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, TextIO

from ssdcompare.units import format_duration

if TYPE_CHECKING:
    from ssdcompare.sweep import Progress


def say(text: str, stream: TextIO | None = None, end: str = "\n") -> None:
    """Print to stderr (or `stream`), ignoring a terminal that has gone away (SIGHUP, a closed
    pipe): results are on disk already, and losing a message must not lose them."""
    target = stream if stream is not None else sys.stderr
    if target is None:  # started with the stream closed (2>&-)
        return
    try:
        target.write(text + end)
        target.flush()
    except (OSError, ValueError):
        pass


def _describe(event: Progress) -> str:
    return f"[{event.index}/{event.total}] {event.target}: {event.job} (repeat {event.repeat})"


class ProgressLine:
    """Receives sweep progress events; see the module docstring for what it prints where."""

    def __init__(self, stream: TextIO | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        try:
            self.interactive = self.stream.isatty()
        except (OSError, ValueError, AttributeError):  # closed, or None
            self.interactive = False
        self.width = 0

    def __call__(self, event: Progress) -> None:
        eta = f", ETA {format_duration(event.eta_s)}" if event.eta_s is not None else ""
        if event.state == "start":
            if self.interactive:
                self._show(_describe(event) + eta)
            return
        problem = f": {event.error}" if event.error and event.state != "ok" else ""
        line = f"{_describe(event)} {event.state.upper() if event.state != 'ok' else 'ok'}"
        if self.interactive:
            if event.state != "ok":
                self._show("")
                say("\r" + line + problem, self.stream)
                self.width = 0
        else:
            say(line + problem + (eta if event.state == "ok" else ""), self.stream)

    def _show(self, line: str) -> None:
        pad = max(self.width - len(line), 0)
        say("\r" + line + " " * pad, self.stream, end="")
        self.width = len(line)

    def close(self) -> None:
        if self.interactive and self.width:
            self._show("")
            say("\r", self.stream, end="")
            self.width = 0
