"""The exception types core code raises for problems a user can act on, and for being stopped."""

from __future__ import annotations

import signal


class SsdcompareError(Exception):
    """A problem the user can fix; the message says what happened and what to do next.

    The CLI prints the message without a traceback; library users (e.g. Jupyter) catch it.
    """


class NewerFormatError(SsdcompareError):
    """A stored file written by a newer ssdcompare; the message says to upgrade."""


class Stopped(KeyboardInterrupt):
    """The sweep was asked to stop by a signal other than Ctrl-C (SIGTERM, SIGHUP).

    A KeyboardInterrupt, so every path that stops fio cleanly on Ctrl-C does the same here.
    """

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum

    @property
    def name(self) -> str:
        return signal.Signals(self.signum).name


def stop_reason(interrupt: BaseException) -> str:
    """How a stop is described to people: "Ctrl-C" or "SIGTERM"."""
    return interrupt.name if isinstance(interrupt, Stopped) else "Ctrl-C"
