"""Finding fio's JSON in what fio printed, and checking the shape of the document.

Text before the JSON (notes, "fio: pid=..., err=..." lines, "fio: terminating on signal 2") is kept
as `notes`; the JSON starts at the first line that opens a JSON object ("{" then a key, or
nothing, on that line). When no line does, fio's JSON may have begun in the middle of a line:
fio writes a message per block that fails its check into the same file, and at a deep queue
the JSON starts where the last message breaks off. It is read then only when it is certain:
the last "{" followed by a line break and fio's first key ("fio version"; a line break never
stands inside a JSON string, so nothing else can look so) opens an object that runs to the end
of the file. With --status-interval fio prints several cumulative reports back to
back: the last one is the result. Text after the JSON (the normal report of
--output-format=json+,normal) is kept as `trailing_text`. A bare nan/-nan/inf that fio's %f
writes is read as JSON's NaN/Infinity, and an object in which a key appears more than once keeps
every pair (`_Repeated`). The document must hold a list of job entries, each an object with a
jobname and an error; anything else is refused with a message that says what the file is
without quoting it (it may be anyone's file).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from ssdcompare.fio.result.models import FioOutputError
from ssdcompare.fio.result.values import _kind

# a line opening a JSON object: "{" followed by a key, the end of the object or the end of the
# line; a line such as "{x}: (groupid=0, ...)" (a job called "{x}" in a normal report) is text
_JSON_START = re.compile(r'^\{(?=[ \t\r]*(?:"|\}|\n|\Z))', re.MULTILINE)
_NOT_TEXT = "\ufffd\x7f"  # a byte that is no UTF-8 (replaced when decoded), DEL
# fio formats floats with %f, so a NaN or infinity would come out as a bare nan/-nan/inf
# every way a nan or inf can be written (fio's %f, or JSON's NaN / Infinity), as a word
_MAYBE_NON_FINITE = re.compile(r"(?<![A-Za-z])(nan|inf(inity)?)(?![A-Za-z])", re.IGNORECASE)
_NON_NUMBER = re.compile(r"(?<=[:,\[])(\s*)(-?)(nan|inf(?:inity)?)(?=\s*[,}\]])", re.IGNORECASE)
# fio's JSON opens with "{", a line break and its first key: found so in the middle of a line
_FIO_OPENING = re.compile(r'\{(?=\r?\n[ \t]*"fio version")')


class _Repeated(dict):  # type: ignore[type-arg]
    """A JSON object in which some key appears more than once; `pairs` keeps every one.

    fio writes such objects: older clients put every server's global options into one object,
    and a client with --status-interval repeats each job's options once per report.
    """

    def __init__(self, pairs: list[tuple[str, Any]]) -> None:
        super().__init__(pairs)
        self.pairs = pairs


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj = dict(pairs)
    return obj if len(obj) == len(pairs) else _Repeated(pairs)


def _json_int(digits: str) -> int | float:
    """A JSON integer as the careful reading decodes it: one of more digits than Python
    makes an int of (4300) is read as the float it is near (inf, then named and read as
    missing where it is used), not as a reason to refuse the whole output."""
    try:
        return int(digits)
    except ValueError:
        return float(digits)


def _split(text: str, source: str) -> tuple[list[str], list[dict[str, Any]], str]:
    if not text.strip():
        raise FioOutputError(
            f"{source}: empty, fio wrote no results (was it killed before it finished, e.g. by"
            " SIGKILL or the OOM killer?); rerun the job",
            "is empty: fio wrote no results (killed before it finished?)",
        )
    start = _JSON_START.search(text)
    if start is None:
        after = _after_messages(text)
        if after is not None:
            return after
        # what the file is, never what it holds: it may be anyone's file (a key, a config)
        raise FioOutputError(
            f"{source}: not JSON: {_what_it_begins_with(text)}; run fio with"
            " --output-format=json+ and read the file it writes",
            "holds no JSON (no line starts with '{'): it is not fio's JSON output",
        )
    decoder = json.JSONDecoder(object_pairs_hook=_object, parse_int=_json_int)
    documents: list[dict[str, Any]] = []
    notes_end = pos = start.start()
    while True:
        try:
            doc, end = decoder.raw_decode(text, pos)
        except json.JSONDecodeError as err:
            repaired = text[:pos] + _NON_NUMBER.sub(_number_token, text[pos:])
            try:
                doc, end = decoder.raw_decode(repaired, pos)
            except json.JSONDecodeError:
                # a text line that merely looks like JSON's start when another follows; else
                # the report itself is cut off, and an earlier one is no final result
                following = _JSON_START.search(text, pos + 1)
                if following is None:
                    raise _damaged(source, err, documents) from None
                pos = following.start()
                continue
            except (ValueError, RecursionError) as other:
                raise _unreadable(source, other) from None
            text = repaired
        except (ValueError, RecursionError) as err:
            raise _unreadable(source, err) from None
        if not documents:
            notes_end = pos
        documents.append(doc)
        # another report follows (--status-interval), possibly after a normal-format report
        following = _JSON_START.search(text, end)
        if following is None:
            notes = [line.rstrip() for line in text[:notes_end].splitlines() if line.strip()]
            return notes, documents, text[end:].strip()
        pos = following.start()


def _after_messages(text: str) -> tuple[list[str], list[dict[str, Any]], str] | None:
    """fio's JSON begun in the middle of a line, after its messages (see the module's
    words): the notes before it and the one document, or None unless the last opening of
    fio's JSON begins an object that runs to the end of the text."""
    openings = list(_FIO_OPENING.finditer(text))
    if not openings:
        return None
    pos = openings[-1].start()
    decoder = json.JSONDecoder(object_pairs_hook=_object, parse_int=_json_int)
    for candidate in (text, text[:pos] + _NON_NUMBER.sub(_number_token, text[pos:])):
        try:
            doc, end = decoder.raw_decode(candidate, pos)
        except (ValueError, RecursionError):
            continue
        if isinstance(doc, dict) and not candidate[end:].strip():
            notes = [line.rstrip() for line in text[:pos].splitlines() if line.strip()]
            return notes, [doc], ""
        return None
    return None


def _counted(count: int, what: str) -> str:
    return f"{count} {what}{'' if count == 1 else 's'}"


def _what_it_begins_with(text: str) -> str:
    """What kind of content a text without JSON is, in words that quote none of it."""
    counted = f"{_counted(len(text.splitlines()), 'line')}, none starting with '{{'"
    head = text.lstrip()[:4096]
    if any(char in _NOT_TEXT or ord(char) < 32 and char not in "\t\n\r" for char in head):
        return f"it begins with binary data, not '{{' ({counted})"
    return f"it begins with text, not '{{' ({counted})"


def _may_hold_non_finite(text: str) -> bool:
    """Whether `text` can hold a nan or inf (as fio's %f or JSON's NaN / Infinity write them):
    a look for the letters first, as most outputs hold neither, then the word itself."""
    lowered = text.lower().replace('"minf"', "")  # fio's minor faults: every job has them
    if "nan" not in lowered and "inf" not in lowered:
        return False
    return _MAYBE_NON_FINITE.search(text) is not None


def _number_token(match: re.Match[str]) -> str:
    space, sign, word = match.groups()
    if word.lower().startswith("nan"):
        return f"{space}NaN"
    return f"{space}{sign}Infinity"


def _damaged(
    source: str, err: json.JSONDecodeError, documents: Sequence[dict[str, Any]]
) -> FioOutputError:
    where = f"line {err.lineno}, column {err.colno}: {err.msg}"
    after = f" after {len(documents)} complete status report(s)" if documents else ""
    return FioOutputError(
        f"{source}: fio's JSON is cut off or damaged ({where}){after}; the run probably"
        " stopped before fio finished writing (killed, disk full). Rerun the job",
        f"holds fio's JSON cut off or damaged ({where}){after}",
    )


def _unreadable(source: str, err: BaseException) -> FioOutputError:
    # Python refuses integers of thousands of digits and nesting deeper than its stack
    what = "nested too deeply" if isinstance(err, RecursionError) else str(err)
    return FioOutputError(
        f"{source}: fio's JSON cannot be read ({what}); fio never writes that, so the file is"
        " damaged: rerun the job",
        "holds JSON nested too deeply or a number too long to read: fio never writes that"
        if isinstance(err, RecursionError) or "digits" in what
        else "holds JSON that cannot be read: fio never writes that",
    )


# --- the shape of the document ------------------------------------------------------------


def _entries(doc: dict[str, Any], source: str) -> tuple[list[dict[str, Any]], bool]:
    """The job entries, checked: every one an object with a jobname and an errno."""
    client_server = "client_stats" in doc
    key = "client_stats" if client_server else "jobs"
    is_fio = "fio version" in doc
    what = "fio's JSON is not usable" if is_fio else "JSON, but not fio output"
    if key not in doc:
        raise _no_entries(doc, source, what, is_fio)
    entries = doc[key]
    if not isinstance(entries, list):
        raise FioOutputError(
            f"{source}: {what}: '{key}' is {_kind(entries)}, where fio writes a list of job"
            " entries",
            f"holds a '{key}' that is no list of job entries",
        )
    for index, entry in enumerate(entries):
        _check_entry(entry, f"{key}[{index}]", source, what, is_fio)
    return entries, client_server


def _no_entries(doc: dict[str, Any], source: str, what: str, is_fio: bool) -> FioOutputError:
    """The error for a document without a list of job entries."""
    keys = ", ".join(list(doc)[:6]) or "none"
    if is_fio:
        return FioOutputError(
            f"{source}: {what}: it has no 'jobs' (or 'client_stats') list of results"
            f" (top-level keys: {keys}); rerun the job",
            "holds fio's JSON without a 'jobs' (or 'client_stats') list of results",
        )
    # anyone's JSON (a config, a token store): its keys are not quoted, only counted
    return FioOutputError(
        f"{source}: {what} ({_counted(len(doc), 'top-level key')}; fio writes 'fio version'"
        " and 'jobs' or 'client_stats'); give the file fio wrote with --output-format=json+",
        "holds JSON, but not fio output (no 'fio version' and 'jobs')",
    )


def _check_entry(entry: Any, place: str, source: str, what: str, is_fio: bool) -> None:
    """Refuse a job entry (at `place`, e.g. jobs[3]) that is no object with a jobname that is
    a name and an error."""
    if not isinstance(entry, dict):
        raise FioOutputError(
            f"{source}: {what}: {place} is {_kind(entry)}, where fio writes a job entry"
            " (an object with 'jobname', 'groupid', 'error' and the results)",
            f"holds {place}, which is no job entry",
        )
    if "jobname" not in entry:
        keys = ", ".join(list(entry)[:6]) or "none"
        keys = f"its keys: {keys}" if is_fio else _counted(len(entry), "key")
        raise FioOutputError(
            f"{source}: {what}: {place} has no 'jobname' ({keys}); fio names"
            " every entry, so this one is damaged or was not written by fio",
            f"holds {place} without a 'jobname': damaged or not written by fio",
        )
    name = entry["jobname"]
    if not isinstance(name, str):
        raise FioOutputError(
            f"{source}: {what}: the 'jobname' of {place} is {_kind(name)}, not a name",
            f"holds {place} whose 'jobname' is not a name",
        )
    if "error" not in entry:
        named = f" ({name!r})" if is_fio else ""
        raise FioOutputError(
            f"{source}: {what}: {place}{named} has no 'error': whether the job failed is unknown",
            f"holds {place} without an 'error': whether the job failed is unknown",
        )
