"""The exception types core code raises for problems a user can act on, and for being stopped."""

from __future__ import annotations

import signal
from typing import Any


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


def interrupted(err: BaseException) -> bool:
    """Whether `err` is, or was caused by, Ctrl-C. Python wraps an interrupt that lands in
    some places (e.g. inside a class being defined while a module is imported) in another
    exception; the interrupt is then in its chain."""
    seen = set()
    while err is not None and id(err) not in seen:
        if isinstance(err, KeyboardInterrupt):
            return True
        seen.add(id(err))
        err = err.__cause__ or err.__context__
    return False


def location(parts: Any) -> str:
    """Where a problem is in nested data, written as in the file: "matrices[0].axes.bs[2]"."""
    text = ""
    for part in parts:
        text += f"[{part}]" if isinstance(part, int) else (f".{part}" if text else str(part))
    return text


def validation_problems(err: Any) -> list[tuple[tuple[Any, ...], str, dict[str, Any]]]:
    """A pydantic ValidationError as (location parts, message, pydantic's item) per problem.

    The message drops pydantic's "Value error, " prefix; for a wrong type it names the value
    given, e.g. "Input should be a valid integer (got 'fast')".
    """
    problems = []
    for item in err.errors():
        msg = item["msg"].removeprefix("Value error, ")
        if item["type"] not in ("value_error", "missing", "extra_forbidden") and "input" in item:
            given = repr(item["input"])
            msg = f"{msg} (got {given if len(given) <= 80 else given[:77] + '...'})"
        problems.append((tuple(item["loc"]), msg, item))
    return problems


def validation_message(err: Any) -> str:
    """The first problem of a pydantic ValidationError with its place: "suite.name: Field
    required"."""
    parts, msg, _ = validation_problems(err)[0]
    where = location(parts)
    return f"{where}: {msg}" if where else msg
