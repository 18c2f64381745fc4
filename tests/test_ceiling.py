"""The host's ceiling (`sweep --ceiling`): each reading job once on a zram RAM disk the sweep
makes and removes, with the sweep's accepted options; a RAM disk left by a sweep that was
killed is removed by the next sweep, and nothing else is."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from blockdevs import zram_device
from suitefiles import suite_file

from ssdcompare.ceiling import ceiling_iops

RunCli = Callable[..., object]  # the run_cli fixture: exit_code, stdout, stderr


def zram_names() -> set[str]:
    return {p.name for p in Path("/sys/block").iterdir() if p.name.startswith("zram")}


@pytest.mark.root
@pytest.mark.fio
def test_the_ceiling_runs_with_the_accepted_options_and_so_does_its_resume(
    tmp_path: Path, run_cli: RunCli
) -> None:
    suite = suite_file(tmp_path, "delayed",
                       "{rw: randread, bs: 4k, iodepth: 1, extra: {startdelay: 0}}",
                       "{rw: randread, bs: 4k, iodepth: 2, extra: {bssplit: 4k/50:8k/50}}",
                       defaults="{runtime: 1, size: 16m}")  # fmt: skip
    jobs = ["randread-4k-qd1+startdelay0", "randread-4k-qd2+bssplit4k.50.8k.50"]
    out = tmp_path / "r"
    before = zram_names()
    with zram_device(64 << 20) as device:
        done = run_cli("sweep", "--devices", device, "--suite", str(suite), "--ceiling",
                       "--allow-option", "startdelay,bssplit", "--out", str(out))  # fmt: skip
        assert done.exit_code == 0, done  # type: ignore[attr-defined]
        assert sorted(p.name for p in (out / "ceiling").iterdir()) == jobs
        for job in jobs:
            assert (ceiling_iops(out, job) or 0) > 0, job
        assert "startdelay=0" in (out / "ceiling" / jobs[0] / "jobfile.fio").read_text()
        # a resume measures a missing ceiling with the same options
        (out / "ceiling" / jobs[1] / "status.json").unlink()
        again = run_cli("sweep", "--resume", str(out))
        assert again.exit_code == 0, again  # type: ignore[attr-defined]
        assert (ceiling_iops(out, jobs[1]) or 0) > 0
        assert "bssplit=4k/50:8k/50" in (out / "ceiling" / jobs[1] / "jobfile.fio").read_text()
    assert zram_names() == before
