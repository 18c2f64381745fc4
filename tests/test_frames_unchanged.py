"""The frames made from every recorded result are the frames they were: the results frame,
the per-job summary, the time series and the bursts of each recorded results folder, and the
frame of each recorded fio output. Each is kept as a digest of its columns, types and values
(tests/data/frames.json); a change to how results are read that changes any number, type,
column or row order shows here, named by frame.

When a change to a frame is meant (a new column, a corrected value), record the digests again
and say why in the commit: `python tests/test_frames_unchanged.py`.
"""

from __future__ import annotations

import hashlib
import json
import sys
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path

import pandas as pd

import ssdcompare
from ssdcompare.errors import SsdcompareError

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "tests" / "data"
DIGESTS = DATA / "frames.json"
FOLDERS = [REPO / "examples" / "results" / "ramdisk-vs-loop", DATA / "format1-results"]


def digest(frame: pd.DataFrame) -> str:
    """The frame's columns, their types and every value, in order, as one digest; the
    repository's own path is left out (frames name the folder they were read from)."""
    text = "\n".join([
        json.dumps(list(map(str, frame.columns))),
        json.dumps([str(dtype) for dtype in frame.dtypes]),
        frame.astype(str).to_csv(index=False),
    ]).replace(str(REPO), "<repo>")  # fmt: skip
    return hashlib.sha256(text.encode()).hexdigest()


def _quietly(make: Callable[[], pd.DataFrame]) -> str:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return digest(make())
        except SsdcompareError as err:  # an output fio cannot be read from stays unreadable
            return "error: " + str(err).replace(str(REPO), "<repo>")


def frames() -> Iterator[tuple[str, Callable[[], str]]]:
    """(name, a function making the frame's digest) for every recorded result."""
    for folder in FOLDERS:
        name = folder.relative_to(REPO).as_posix()

        def loaded(folder: Path = folder) -> pd.DataFrame:
            return ssdcompare.load(folder, cache=False)

        yield f"{name} load", lambda f=loaded: _quietly(f)
        yield f"{name} job_summary", lambda f=loaded: _quietly(lambda: ssdcompare.job_summary(f()))
        yield f"{name} timeseries", lambda d=folder: _quietly(lambda: ssdcompare.timeseries(d))
        yield f"{name} bursts", lambda d=folder: _quietly(lambda: ssdcompare.bursts(d))
    for path in sorted(DATA.glob("*.json")):
        if path != DIGESTS:
            name = path.relative_to(REPO).as_posix()
            yield f"{name} read_fio", lambda p=path: _quietly(lambda: ssdcompare.read_fio(p))


def test_every_recorded_result_makes_the_frames_it_made() -> None:
    kept = json.loads(DIGESTS.read_text())
    made = {name: make() for name, make in frames()}
    assert set(made) == set(kept), "record the digests again: frames were added or removed"
    changed = sorted(name for name in made if made[name] != kept[name])
    assert not changed, f"these frames changed: {changed}"
    assert sum(not value.startswith("error") for value in made.values()) >= 30


if __name__ == "__main__":
    DIGESTS.write_text(json.dumps({name: make() for name, make in frames()}, indent=1) + "\n")
    print(f"wrote {DIGESTS}", file=sys.stderr)
