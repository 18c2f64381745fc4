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


# Error types whose message is built from the value given (a validator's own words, a tag
# read from the input): said without their message where a value must not be quoted.
_QUOTING_TYPES = frozenset({"value_error", "assertion_error", "union_tag_invalid", "json_invalid"})


def field_names(model: Any) -> frozenset[str]:
    """The field names and aliases of a pydantic model and of every model its fields hold,
    at any depth: the words a location in its data may use that are not the data's own."""
    names: set[str] = set()
    seen: set[Any] = set()
    pending = [model]
    while pending:
        kind = pending.pop()
        if kind in seen:
            continue
        seen.add(kind)
        for name, info in getattr(kind, "model_fields", {}).items():
            names.update(n for n in (name, info.alias) if isinstance(n, str))
            annotations = [info.annotation]
            while annotations:  # list[X], dict[str, X], X | None, Annotated[...]: every X
                annotation = annotations.pop()
                if hasattr(annotation, "model_fields"):
                    pending.append(annotation)
                annotations.extend(getattr(annotation, "__args__", ()))
    return frozenset(names)


def stored_validation_message(err: Any, model: Any) -> str:
    """The first problem of a pydantic ValidationError of a stored file, told without
    anything the file holds: its place by the model's field names and list positions (a key
    of the file's own is "[...]"), pydantic's words for what is wrong, never the value."""
    item = err.errors()[0]
    known = field_names(model)
    parts = [part if isinstance(part, int) or part in known else "[...]" for part in item["loc"]]
    where = location(parts).replace(".[...]", "[...]")
    ctx = item.get("ctx") or {}
    if item["type"] in _QUOTING_TYPES or "error" in ctx or "tag" in ctx:
        msg = "not a value this field takes"
    else:
        msg = item["msg"]
    return f"{where}: {msg}" if where else msg
