"""Result sets over time: results folders taken together as one side of a comparison (BASE
or NEW: one sweep, or several made as repeats), the drives measured in them known by name
and by identity, and the drives of two sides paired.

A drive is named on a side as the frame names it, without its sweep: `nvme0n1`, `a:nvme0n1`
on a fio server, `loop0 in loop0+loop1` for a group's member. Runs of several folders of one
side are that drive's repeats, each run kept apart by its folder.

A drive's identity is what the sweep recorded of the hardware: its serial (with its model)
or WWID. A loop device has none; the file it reads and writes (by device and inode) stands
for it, so the same image attached as another loop device is the same drive. Two sides'
drives are paired as `--match` says, then by identity (a drive moved to another slot keeps
its serial), then by name.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import pandas as pd

from ssdcompare.analysis.frame import label_devices, load_results
from ssdcompare.analysis.likeness import Unit, units_of
from ssdcompare.errors import SsdcompareError
from ssdcompare.results.models import Manifest
from ssdcompare.results.store import ResultsDir, unique_folders

# how far apart a side's folders may keep their runs' repeat numbers
_REPEATS_APART = 100_000


@dataclass(frozen=True)
class Identity:
    """What a drive is, beyond its name: `key` compares, `words` says it."""

    key: str
    words: str
    hardware: bool  # the drive's own (serial, WWID), not the file a loop device reads


@dataclass
class Drive:
    """One drive measured on a side, with what its (first) sweep recorded of it."""

    name: str
    identity: Identity | None
    unit: Unit  # its facts (device, host, fio) for telling what changed


@dataclass
class Sweep:
    """One results folder of a side: where, and when it started."""

    path: Path
    created_at: str
    manifest: Manifest


@dataclass
class Side:
    """Results folders taken together: their rows (the drive's name as `label`, each
    folder's repeats numbered apart), their drives and their sweeps in date order."""

    role: str  # "BASE", "NEW", or a date in a history
    sweeps: list[Sweep]
    frame: pd.DataFrame
    drives: dict[str, Drive]
    notes: list[str] = field(default_factory=list)
    mixed: set[str] = field(default_factory=set)  # names that hold two drives here

    @property
    def folders(self) -> list[Path]:
        return [s.path for s in self.sweeps]

    def named(self, name: str) -> str:
        """The drive `name` means on this side: its name, or the one name it is short for
        (`nvme0n1` for `a:nvme0n1`); an error naming the drives there are otherwise."""
        if name in self.drives:
            return name
        short = [d for d in self.drives if name in _short_names(d)]
        if len(short) == 1:
            return short[0]
        listed = ", ".join(self.drives) or "none"
        if short:
            raise SsdcompareError(f"{name!r} could be any of {', '.join(short)} in "
                                  f"{self.role}: give one whole")  # fmt: skip
        raise SsdcompareError(f"no drive {name!r} in {self.role}; its drives: {listed}")


def _short_names(name: str) -> set[str]:
    device = name.split(" in ", 1)[0]
    return {device, device.split(":")[-1]}


def load_side(role: str, folders: list[Path]) -> Side:
    """`folders` as one side (see the module's docstring), in the order they were made."""
    opened = [ResultsDir.open(p) for p in unique_folders(folders)]
    if not opened:
        raise SsdcompareError(f"no results folders for {role}")
    sweeps = sorted((Sweep(r.path, r.manifest.created_at, r.manifest) for r in opened),
                    key=started)  # fmt: skip
    by_path = {str(r.path): r for r in opened}
    frames = []
    for number, sweep in enumerate(sweeps):
        frame = load_results(by_path[str(sweep.path)])
        frame["repeat"] = frame["repeat"] + number * _REPEATS_APART
        frames.append(frame)
    frame = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    frame["label"] = _drive_names(frame)
    drives, notes, mixed = _drives(frame, by_path)
    return Side(role=role, sweeps=sweeps, frame=frame, drives=drives, notes=notes, mixed=mixed)


def started(sweep: Sweep) -> datetime:
    """When a sweep started, from its manifest; an error when that is not a date (a folder
    edited by hand): results over time need their order."""
    try:
        found = datetime.fromisoformat(sweep.created_at)
    except (TypeError, ValueError):
        found = None
    if found is None or found.tzinfo is None:
        raise SsdcompareError(f"{sweep.path}: its manifest.json says it started "
                              f"{sweep.created_at!r}, which is not a date and time with its "
                              "time zone (as 2026-11-27T02:40:06+00:00); the folder was "
                              "edited")  # fmt: skip
    return found


def _drive_names(frame: pd.DataFrame) -> pd.Series:
    """Each row's drive as named on its side: the frame's label without a sweep (a drive
    in several folders is one drive) and without this machine's name (another machine of
    the same setup names its devices alike)."""
    local = ~frame["remote"].astype("boolean").fillna(False)
    plain = frame.assign(sweep="", host=frame["host"].where(~local, None))
    return label_devices(plain)["label"]


def _drives(
    frame: pd.DataFrame, opened: dict[str, ResultsDir]
) -> tuple[dict[str, Drive], list[str], set[str]]:
    """Each drive of a side with its identity and facts. A drive a later folder names
    otherwise (the same serial or image under another name) keeps its first name: its rows
    are renamed in `frame`. A name that holds two different drives over the folders (other
    serials) is noted and returned among the mixed ones."""
    drives: dict[str, Drive] = {}
    notes: list[str] = []
    mixed: set[str] = set()
    for sweep, rows in frame.groupby("sweep", sort=False):
        results = opened[str(sweep)]
        for unit in units_of(rows, {str(sweep): results}):
            row = rows[rows["label"] == unit.label].iloc[0]
            found = identity_of(results.manifest, row)
            same = [d for d in drives.values() if found is not None and d.identity is not None
                    and d.identity.key == found.key]  # fmt: skip
            if same and same[0].name != unit.label and " in " not in unit.label:
                chosen = (frame["sweep"] == sweep) & (frame["label"] == unit.label)
                frame.loc[chosen, "label"] = same[0].name
                continue
            known = drives.get(unit.label)
            if known is None:
                drives[unit.label] = Drive(unit.label, found, unit)
            elif (
                found is not None
                and known.identity is not None
                and (found.key != known.identity.key and found.hardware)
            ):
                mixed.add(unit.label)
                notes.append(f"{unit.label} is not one drive in these folders: "
                             f"{known.identity.words} and {found.words}")  # fmt: skip
    return drives, notes, mixed


def identity_of(manifest: Manifest, row: pd.Series) -> Identity | None:
    """A drive's identity from its sweep's manifest (None: nothing recorded identifies it,
    as for a file target or a device on another host)."""
    if bool(row.get("remote")) and pd.notna(row.get("remote")):
        return None
    name = _target_name(manifest, row)
    info = next((d for d in manifest.devices if d.name == name), None)
    recorded = manifest.identities.get(name)
    serial = (info.serial if info is not None else None) or (
        recorded.serial if recorded is not None else None)  # fmt: skip
    model = (info.model if info is not None else None) or (
        recorded.model if recorded is not None else None)  # fmt: skip
    if serial:
        words = f"serial {serial}" + (f" ({model})" if model else "")
        return Identity(f"serial {model or ''}/{serial}", words, hardware=True)
    if recorded is not None and recorded.wwid:
        return Identity(f"wwid {recorded.wwid}", f"WWID {recorded.wwid}", hardware=True)
    if recorded is not None and recorded.backing_inode:
        where = f"{recorded.backing_file} " if recorded.backing_file else ""
        return Identity(f"backing {recorded.backing_inode}",
                        f"backing file {where}(inode {recorded.backing_inode})",
                        hardware=False)  # fmt: skip
    return None


def _target_name(manifest: Manifest, row: pd.Series) -> str:
    """The manifest's name for the device of a frame's row (a group's member by its part)."""
    device = str(row["member"]) if pd.notna(row.get("member")) else str(row["device"])
    for part in (p for t in manifest.targets for p in t.parts):
        if part.device == device or part.name == device:
            return part.name
    return device


@dataclass(frozen=True)
class Pair:
    """A drive of BASE and the drive of NEW it is compared with, and how they were paired."""

    base: str
    new: str
    how: str  # "by name", "by serial ...", "as --match says"
    note: str | None = None  # a name shared by two different drives

    @property
    def name(self) -> str:
        """The pair as its lines name it: "nvme0n1", or "loop3 → loop7" when renamed."""
        return self.base if self.base == self.new else f"{self.base} → {self.new}"


def pair_drives(
    base: Side,
    new: Side,
    matches: list[tuple[str, str]] = (),  # type: ignore[assignment]
) -> tuple[list[Pair], list[str], list[str]]:
    """The drives of `base` paired with those of `new` (see the module's docstring), and the
    drives left over on each side."""
    pairs: list[Pair] = []
    left_base, left_new = list(base.drives), list(new.drives)
    for given_base, given_new in matches:
        one, other = base.named(given_base), new.named(given_new)
        if one not in left_base or other not in left_new:
            raise SsdcompareError(f"--match {given_base}={given_new}: a drive given twice")
        pairs.append(Pair(one, other, "as --match says"))
        left_base.remove(one)
        left_new.remove(other)
    pairs += follow_drives(base.drives, new.drives, left_base, left_new)
    order = list(base.drives)
    return sorted(pairs, key=lambda p: order.index(p.base)), left_base, left_new


def follow_drives(
    known: dict[str, Drive],
    found: dict[str, Drive],
    left_known: list[str],
    left_found: list[str],
    roles: tuple[str, str] = ("BASE", "NEW"),
) -> list[Pair]:
    """The drives of `known` still in `left_known` paired with those of `found` still in
    `left_found`: by identity first, then by name (each known drive's own name, whatever
    its key in `known`). Paired drives leave both lists; `roles` name the two sides where
    one name holds two different drives."""
    pairs: list[Pair] = []
    for key in list(left_known):
        drive = known[key]
        ident = drive.identity
        same = [n for n in left_found if ident is not None and _same(ident, found[n].identity)]
        if ident is not None and len(same) == 1:
            how = "by name" if same[0] == drive.name else f"by {ident.words}"
            pairs.append(Pair(key, same[0], how))
            left_known.remove(key)
            left_found.remove(same[0])
    for key in list(left_known):
        name = known[key].name
        if name in left_found:
            pairs.append(Pair(key, name, "by name", _another(known[key], found[name], roles)))
            left_known.remove(key)
            left_found.remove(name)
    return pairs


def _same(one: Identity, other: Identity | None) -> bool:
    return other is not None and one.key == other.key


def _another(base: Drive, new: Drive, roles: tuple[str, str]) -> str | None:
    """Said when one name holds two different drives: their hardware identities differ."""
    one, other = base.identity, new.identity
    if one is None or other is None or not (one.hardware and other.hardware):
        return None
    if one.key == other.key:
        return None
    return (f"another drive under the same name: {one.words} in {roles[0]}, {other.words} "
            f"in {roles[1]}")  # fmt: skip
