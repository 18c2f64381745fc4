"""What `sweep --resume` checks before it writes again: the manifest is this user's (or the
devices to resume are named), each target resolves as it did and is still the device the
sweep started on, the same fio renders the same jobfiles as planned, and --destroy-data is
given again where the sweep overwrote something. The plan of the sweep is rebuilt from its
manifest (`replan`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from ssdcompare.errors import SsdcompareError
from ssdcompare.fio.binary import FioInfo, default_ioengine
from ssdcompare.fio.jobfile import RenderedJob, render
from ssdcompare.results.models import Manifest
from ssdcompare.results.store import MANIFEST
from ssdcompare.run.plan import Plan
from ssdcompare.target.devices import Target, resolve_on_host
from ssdcompare.target.identity import differences, identify, noun


def unsigned(path: Path, manifest: Manifest) -> str:
    """Why a folder whose manifest this user's ssdcompare did not sign is not resumed as it
    is, and how to resume it: resuming writes to the devices its manifest names."""
    named = ", ".join(f"{t.spec} ({t.path})" for t in manifest.targets)
    return (
        f"{path}/{MANIFEST} is not signed by your ssdcompare (the sweep was started by "
        "someone else, on another machine, by an older ssdcompare, or the file was edited): "
        f"a resume writes to the devices it names, which are {named}. If they are yours to "
        "write, name the ones to resume yourself: --devices "
        + ",".join(t.spec for t in manifest.targets)
    )


def resumed_targets(
    manifest: Manifest, devices: Sequence[str] | None, trusted: bool = True
) -> list[Target]:
    """The targets to resume: all, or those `devices` names. A manifest this user's
    ssdcompare did not sign (`trusted` False) may pair any label with any path, so there a
    target is named by its device or path only, never by its label. Each must resolve as it
    did when the sweep started."""
    recorded = manifest.targets
    if devices:
        recorded = _named(recorded, devices, trusted)
    for target in (part for unit in recorded for part in unit.parts):
        hosts = {target.host.name: target.host} if target.host is not None else {}
        current = resolve_on_host(target.spec, hosts, target.size_bytes if target.kind == "file"
                                  else None)  # fmt: skip
        if current.path != target.path:
            raise SsdcompareError(
                f"{target.spec} now resolves to {current.path}, not {target.path} as when "
                "the sweep started; results would not be comparable"
            )
    return list(recorded)


def _named(recorded: list[Target], devices: Sequence[str], trusted: bool) -> list[Target]:
    """The recorded targets `devices` names (see resumed_targets), in their recorded order."""
    wanted = [d.strip() for d in devices if d.strip()]
    keys = (lambda t: (t.name, t.spec, t.path)) if trusted else (lambda t: (t.spec, t.path))
    known = {key: t for t in recorded for key in keys(t)}
    unknown = [d for d in wanted if d not in known]
    if unknown:
        listed = ", ".join(t.name if trusted else t.spec for t in recorded)
        raise SsdcompareError(
            f"--devices {', '.join(unknown)}: not a target of this sweep; its targets: "
            f"{listed}"
            + (
                ""
                if trusted
                else " (its manifest is not signed by your ssdcompare: name "
                "each by its device or path, as the manifest gives it, not by a label)"
            )
        )
    names = {known[d].name for d in wanted}
    return [t for t in recorded if t.name in names]


def replan(manifest: Manifest, targets: list[Target], fio: FioInfo) -> Plan:
    """The plan of the sweep as its manifest records it, for `targets`, rendered again with
    `fio`: refused when that is not the fio the sweep started with, or when a jobfile would
    differ from the planned one."""
    if manifest.host.fio_version and fio.version != manifest.host.fio_version:
        raise SsdcompareError(
            f"the sweep started with {manifest.host.fio_version}, this fio is {fio.version}; "
            "resume with the same fio so the results stay comparable"
        )
    engine = manifest.ioengine or default_ioengine(fio)
    jobs = [
        render(
            workload,
            target,
            manifest.suite.name,
            engine,
            manifest.allowed_options,
            manifest.read_only,
        )  # fmt: skip
        for target in targets
        for workload in manifest.suite.workloads
    ]
    _check_planned(manifest, jobs)
    return Plan(
        suite=manifest.suite, targets=targets, jobs=jobs, repeat=manifest.repeat, fio=fio,
        default_ioengine=engine, allowed_options=manifest.allowed_options,
        read_only=manifest.read_only, precondition=manifest.precondition,
        ceiling=manifest.ceiling, parallel_hosts=manifest.parallel_hosts, purge=manifest.purge,
    )  # fmt: skip


def _check_planned(manifest: Manifest, jobs: list[RenderedJob]) -> None:
    """Every re-rendered jobfile must be the one planned (same fio options, same engine)."""
    for job in jobs:
        planned = manifest.planned.get(job.target.name, {}).get(job.job_id)
        if planned is not None and planned != job.workload_hash:
            raise SsdcompareError(
                f"resuming would run {job.job_id} on {job.target.name} with a different "
                f"jobfile than planned (workload hash {job.workload_hash}, planned {planned}); "
                "resume with the ssdcompare version that started the sweep, or start a new one"
            )


def check_identity(manifest: Manifest, targets: list[Target]) -> None:
    """Refuse to resume on a target that is no longer the device (or file) the sweep started
    on, naming every one and what differs."""
    problems = []
    nouns: set[str] = set()
    for target in targets:
        recorded = manifest.identities.get(target.name)
        if recorded is None:
            continue  # results from before identities were recorded
        found = differences(recorded, identify(target))
        if found:
            problems.append(f"  - {target.name} ({target.path}): {'; '.join(found)}")
            nouns.add(noun(target))
    if problems:
        what = " or ".join(f"{n}(s)" for n in sorted(nouns))
        raise SsdcompareError(
            f"refusing to resume: not the same {what} as when the sweep started:\n"
            + "\n".join(problems)
            + f"\nIf the {what.replace('(s)', '')} was replaced on purpose, start a new sweep "
            "on it; to resume the others only, give --devices with the unchanged ones."
        )


def check_consent_again(
    manifest: Manifest, written: list[Target], consent: bool | list[str]
) -> None:
    """A sweep started with --destroy-data overwrote something: resuming its writes needs the
    consent again (what it overwrote may be gone by now, wiped by the sweep itself: the
    consent is not), and names cover only the devices named."""
    if manifest.guard_overrides and written and not consent:
        raise SsdcompareError(
            "this sweep was started with --destroy-data, overwriting: "
            + "; ".join(manifest.guard_overrides)
            + ". Give --destroy-data again to resume it"
        )
    if isinstance(consent, list):
        # each device overwritten before needs naming again
        again = [t for t in manifest.override_targets
                 if t in {p.name for p in written} and t not in consent]  # fmt: skip
        if again:
            raise SsdcompareError(
                f"this sweep was started with --destroy-data overwriting {', '.join(again)}; "
                f"name {'it' if len(again) == 1 else 'them'} again to resume it: "
                f"--destroy-data {','.join([*consent, *again])}"
            )
