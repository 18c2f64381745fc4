"""What fio says when data comes back wrong: its verify messages (on stderr, or before the
JSON in client/server mode) read into a `VerifyFailure`: what was wrong, at which offset, and
fio's own lines.

A job with `verify` checks every block it reads back against the header and checksum fio wrote
into it; with verify_fatal=1 the first block that comes back wrong ends the job with error 84
(EILSEQ), whose strerror ("Invalid or incomplete multibyte or wide character") says nothing of
data. fio's words do:

    crc32c: verify failed at file /dev/fd/3 offset 1048576, length 65536 (requested block: ...)
           Expected CRC: 377b3780
           Received CRC: f0e92df4
    verify: bad magic header 0, wanted acca at file /dev/fd/3 offset 2097152, length 65536 (...)

fio 2.x wrote "crc32c: verify failed at 1048576/65536". A failure is a data-integrity finding,
never a performance figure: a run with one is a failed run whose error says so.

A job that only reads checks what an earlier verified write left. When no block it read held
a header of its block size (every block fio read failed with a bad magic header or a header of
another length), nothing was there to check: the span was never written by a verified job of
this block size, or was written over since. That run fails too, but it says so
(`no_verified_data`), never that the device gave data back wrong.
"""

from __future__ import annotations

import errno
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

from pydantic import BaseModel, Field

from ssdcompare.fio.check import JobfileError, read_jobfile
from ssdcompare.fio.result.document import _entries, _split
from ssdcompare.fio.result.models import FioOutputError, JobResult
from ssdcompare.units import format_bytes

DATA_WRONG = "data came back wrong"
NO_VERIFIED_DATA = "no verified data where it read"
NO_VERIFIED_WHY = ("the span was never written by a verified job with this block size, or was "
                   "overwritten since")  # fmt: skip
# what fio finds in a block no verified write of this block size left: no header of its own
HEADERLESS = ("bad magic header", "bad header length")
MAX_WORDS = 12  # fio's lines kept per failure: the first failure's, with what follows it
# a checksum that did not match: "<checksum>: verify failed at file F offset N, length L"
_CHECKSUM = re.compile(
    r"(?P<what>[\w-]+): verify failed at (?:file (?P<file>.*?) offset (?P<offset>\d+), "
    r"length (?P<length>\d+)|(?P<old_offset>\d+)/(?P<old_length>\d+))"
)
# a header that is not what fio wrote: "verify: bad magic header 0, wanted acca at file ..."
_HEADER = re.compile(
    r"verify: (?P<what>bad magic header|bad header \w+|unsupported header version|"
    r"unknown header error)\b.*? at file (?P<file>.*?) offset (?P<offset>\d+), "
    r"length (?P<length>\d+)"
)
# any other line of fio's that says verification failed, without a place
_OTHER = re.compile(r"\bverify\b.*\b(failed|mismatch|bad)\b", re.IGNORECASE)
# what each header finding means for the block read back
_MEANING = {
    "bad magic header": "the block holds no header fio wrote: other data, or none",
    "bad header offset": "the block holds data fio wrote for another offset",
    "bad header length": "the block was written with another block size, or its header is "
                         "damaged",
    "bad header rand_seed": "the block holds data of another write",
    "bad header numberio": "the block holds an older write than the last one there",
    "bad header crc": "the block's header is damaged",
}  # fmt: skip


class VerifyFailure(BaseModel):
    """Data that came back wrong in a run, as fio said it."""

    what: str  # "crc32c mismatch", "bad magic header", ... as fio names it
    offset_bytes: int | None = None  # where in the file or device fio wrote the block
    length_bytes: int | None = None  # the block fio checked there
    file: str | None = None  # the file fio named (the run's target, often as /dev/fd/N)
    words: list[str] = Field(default_factory=list)  # fio's own lines, as it printed them
    # a job that only reads found no block with a header of its block size: nothing to check,
    # no finding about the device (see the module's words)
    no_verified_data: bool = False

    @property
    def summary(self) -> str:
        """In a few words: "crc32c mismatch at offset 1 MiB"."""
        offset = self.offset_bytes
        where = f" at offset {offset_words(offset)}" if offset is not None else ""
        meaning = _MEANING.get(self.what)
        return f"{self.what}{where}" + (f" ({meaning})" if meaning else "")

    @property
    def error(self) -> str:
        """The run's error in one line: what came back wrong (or that nothing verified was
        there to check), then fio's words."""
        said = "; ".join(self.words) if self.words else "fio printed no more"
        if self.no_verified_data:
            return f"{NO_VERIFIED_DATA}: {NO_VERIFIED_WHY} (fio found {self.summary}). " \
                   f"fio said: {said}"  # fmt: skip
        return f"{DATA_WRONG}: {self.summary}. fio said: {said}"


def offset_words(offset: int) -> str:
    """An offset as people read it: "1 MiB" when that is exact, else the bytes with an
    approximation, "1052672 (1.0 MiB)"; the start is 0."""
    if offset == 0:
        return "0"
    short = format_bytes(offset)
    return short if "." not in short else f"{offset} ({short})"


def verify_failure(text: str) -> VerifyFailure | None:
    """The first block fio said came back wrong in `text` (what fio printed), or None when it
    said nothing of the kind."""
    lines = text.splitlines()
    for number, line in enumerate(lines):
        found = _checksum_failure(line) or _header_failure(line)
        if found is not None:
            found.words = [line.strip(), *_continued(lines[number + 1 :])][:MAX_WORDS]
            return found
    said = [line.strip() for line in lines if _OTHER.search(line)]
    if said:
        return VerifyFailure(what="verify failed", words=said[:MAX_WORDS])
    return None


def run_failure(
    stderr: Path, output: Path, jobfile: Path, notes: Sequence[str], failed: Sequence[JobResult]
) -> VerifyFailure | None:
    """What a failed run's checks of the data found, from fio's messages (`stderr`, and the
    `notes` before its JSON in `output`), or None when it found nothing of the kind. `failed`
    are the job entries fio reported with an error (none when its JSON could not be read). A
    read (by the run's `jobfile`) none of whose blocks held a header of its block size is
    marked `no_verified_data`."""
    messages = _read(stderr)
    found = verify_failure("\n".join([messages[:_HEAD], *notes]))
    if found is None:
        job = failed[0] if failed else None
        return unexplained(job.error, [*job.global_options, *job.job_options]) if job else None
    if found.what in HEADERLESS and _reads_only(jobfile):
        # fio prints each failure on stderr, and in client/server mode before its JSON
        counts = [_headerless(messages.splitlines()), _headerless(notes)]
        headerless = None if None in counts else max(counts)  # type: ignore[type-var]
        found.no_verified_data = _nothing_there(found, headerless, _blocks_read(output))
    return found


def _nothing_there(first: VerifyFailure, headerless: int | None, read: int | None) -> bool:
    """Whether a read found no verified data at all: every block it read lacked a header of
    its block size (`headerless` of the `read` blocks; None: some block held one). Without
    fio's count of the blocks read, a first such block at the start of the span says so."""
    if headerless is None:
        return False
    return headerless >= read if read is not None else first.offset_bytes == 0


def _blocks_read(output: Path) -> int | None:
    """The blocks fio read in its jobs that failed, as its JSON in `output` counts them (fio
    checks every block it reads; the results leave a failed job's counts out), or None when
    the output does not say."""
    try:
        _, documents, _ = _split(_read(output), output.name)
        entries, _ = _entries(documents[-1], output.name) if isinstance(
            documents[-1], dict) else ([], False)  # fmt: skip
    except FioOutputError:
        return None
    reads = [entry.get("read") for entry in entries
             if entry.get("error") and entry.get("jobname") != "All clients"]  # fmt: skip
    counts = [read.get("total_ios") if isinstance(read, dict) else None for read in reads]
    if not counts or not all(type(n) is int and n >= 0 for n in counts):
        return None
    return sum(counts)


def _headerless(lines: Iterable[str]) -> int | None:
    """How many blocks fio said held no header of their block size, or None when it said of
    any block that its data was wrong (the block held a header: verified data was there)."""
    count = 0
    for line in lines:
        found = _checksum_failure(line) or _header_failure(line)
        if found is not None and found.what not in HEADERLESS:
            return None
        count += found is not None
    return count


_HEAD = 1 << 18  # fio's first messages, enough for the first failure and its lines
_MOST = 64 << 20  # what is read of fio's messages at most: a line per block in flight


def _read(path: Path) -> str:
    try:
        with open(path, "rb") as handle:
            return handle.read(_MOST).decode("utf-8", errors="replace")
    except OSError:
        return ""


def _reads_only(jobfile: Path) -> bool:
    """Whether the run's jobfile only reads (False when it cannot be read: a failure of a
    job that writes is data that came back wrong)."""
    try:
        return not read_jobfile(jobfile.read_text(errors="replace")).writes
    except (OSError, JobfileError):
        return False


def unexplained(job_errno: int, options: Iterable[str]) -> VerifyFailure | None:
    """A job that ended with EILSEQ (84), fio's error for a block that failed its check, while
    verifying (`options`: the names of its options), but whose words were not found: still
    data that came back wrong, where unknown. None for any other error."""
    if job_errno != errno.EILSEQ or "verify" not in set(options):
        return None
    return VerifyFailure(
        what="verify failed",
        words=[f"error {job_errno} (EILSEQ), fio's error for a block that failed its check; "
               "fio.stderr.txt holds what fio printed"],
    )  # fmt: skip


def _checksum_failure(line: str) -> VerifyFailure | None:
    match = _CHECKSUM.search(line)
    if match is None:
        return None
    offset = match.group("offset") or match.group("old_offset")
    length = match.group("length") or match.group("old_length")
    return VerifyFailure(
        what=f"{match.group('what')} mismatch", offset_bytes=int(offset),
        length_bytes=int(length), file=match.group("file"),
    )  # fmt: skip


def _header_failure(line: str) -> VerifyFailure | None:
    match = _HEADER.search(line)
    if match is None:
        return None
    return VerifyFailure(
        what=match.group("what"), offset_bytes=int(match.group("offset")),
        length_bytes=int(match.group("length")), file=match.group("file"),
    )  # fmt: skip


def _continued(lines: list[str]) -> list[str]:
    """The lines that go with a failure line: fio indents them ("       Expected CRC: ...",
    "       Received CRC: ...", where it dumped the blocks)."""
    found = []
    for line in lines:
        if not line[:1].isspace() or not line.strip():
            break
        found.append(" ".join(line.split()))
    return found
