"""The checks a sweep passes before it writes anything, for `sweep`, `sweep --resume` and
`plan` alike: --destroy-data names devices of the sweep, no two targets share data and no
other sweep holds one, fio accepts every jobfile, every fio server answers, the guard
allows every write, and every drive a PTS test would purge can be purged. Each raises
SsdcompareError saying what would be refused and why."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ssdcompare.errors import SsdcompareError
from ssdcompare.fio.client import check_hosts
from ssdcompare.run.plan import Plan, validate
from ssdcompare.run.purge import check_purges
from ssdcompare.target.devices import Target
from ssdcompare.target.guard import Finding, check_write_safety
from ssdcompare.target.locks import Lock, lock_paths


def check_free(targets: Sequence[Target]) -> None:
    """Fail early, before a results folder exists, when two targets of this sweep are the
    same data (a disk and its partition, a loop device and its backing file) or another
    sweep holds one."""
    owner: dict[Path, Target] = {}
    for target in targets:
        for path in lock_paths(target):
            other = owner.setdefault(path, target)
            if other is not target:
                raise SsdcompareError(
                    f"{other.name} and {target.name} share data (one holds or backs the "
                    "other: a disk and its partition, a loop device and its backing file); "
                    "measuring both at once measures neither: list one of them"
                )
            Lock(path, target.path, "checking").release()


def check_fio_accepts(plan: Plan) -> None:
    """fio parses every jobfile before the first one runs: a bad option ends the sweep now,
    not hours later job by job."""
    rejections = validate(plan)
    if rejections:
        listing = "\n".join(f"  {r.said}: {r.reason.splitlines()[0]}" for r in rejections)
        raise SsdcompareError(
            f"{len(rejections)} jobfile(s) cannot run:\n{listing}\n"
            "Fix the suite (`ssdcompare plan` shows each jobfile), then start again."
        )


def consent_names(
    destroy_data: bool | Sequence[str], targets: Sequence[Target]
) -> bool | list[str]:
    """--destroy-data as the guard takes it: True (bare) or the names of the targets it
    covers. A name that is no target of the sweep is an error: a typo must not pass for
    consent, nor hide that the device meant was not named."""
    if isinstance(destroy_data, bool):
        return destroy_data
    # a path names a device of this machine only: one reached through a server needs its name
    names = {key: t.name for t in targets for key in (t.name, t.spec, t.path) if not t.host}
    names.update({key: t.name for t in targets for key in (t.name, t.spec)})
    unknown = [n for n in destroy_data if n not in names]
    if unknown:
        raise SsdcompareError(
            f"--destroy-data {','.join(unknown)}: not a device of this sweep; its devices: "
            f"{', '.join(t.name for t in targets)}"
        )
    return [names[n] for n in destroy_data]


def offered_names(consent: bool | list[str], targets: Sequence[Target]) -> list[str]:
    """The names of the devices --destroy-data offers (`consent` as consent_names gives it):
    every device of the sweep when bare, else those named."""
    return [t.name for t in targets] if consent is True else list(consent or [])


def preflight(
    plan: Plan, destroy_data: bool | Sequence[str] = False
) -> tuple[bool | list[str], list[Finding]]:
    """The checks a sweep passes before it writes anything, for `sweep` and `plan` alike:
    --destroy-data names devices of the sweep, no two targets share data and no other sweep
    holds one, every fio server answers, the guard allows every write, and a PTS test can
    purge the devices offered. Raises SsdcompareError saying what would be refused and why;
    returns the consent as the guard takes it and what --destroy-data overrides."""
    consent = consent_names(destroy_data, plan.devices)
    check_free(plan.devices)
    if plan.fio is not None:
        check_hosts(plan.fio, plan.devices)
    written = [part for target in plan.written_targets for part in target.parts]
    findings = check_write_safety(written, True, consent)
    check_purges(plan.targets, plan.purge, offered_names(consent, plan.devices))
    return consent, findings
