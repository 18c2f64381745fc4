"""Several hosts through fio's client/server mode: real fio servers of the tests' own on
127.0.0.1 and 127.0.0.2 (different ports), real loop devices behind them."""

from __future__ import annotations

import contextlib
import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest
from blockdevs import loop_device
from fioprocs import fio_processes, wait_for
from fioservers import fio_server, other_protocol_server, two_hosts_with_loops
from suitefiles import suite_file

import ssdcompare
from ssdcompare.errors import SsdcompareError
from ssdcompare.fio.binary import FioInfo
from ssdcompare.fio.client import check_hosts, host_problem, local_server_pids
from ssdcompare.fio.result.reader import parse_fio_file
from ssdcompare.run import sweep
from ssdcompare.run.plan import PlanOptions, make_plan
from ssdcompare.target.devices import Target, resolve_targets
from ssdcompare.target.guard import check_write_safety
from ssdcompare.target.hosts import DEFAULT_PORT, Host, is_local, parse_hosts, split_device

DEADLINE_S = 120.0


# ---------------------------------------------------------------- what --hosts means


def test_hosts_are_named_addressed_and_told_local_or_remote() -> None:
    hosts = parse_hosts("a=127.0.0.1, b=127.0.0.2:8802,192.0.2.7")
    assert list(hosts) == ["a", "b", "192.0.2.7"]
    assert hosts["a"] == Host(name="a", address="127.0.0.1", port=DEFAULT_PORT, local=True)
    assert hosts["b"].port == 8802 and hosts["b"].client == "127.0.0.2,8802"
    assert hosts["b"].where == "b (127.0.0.2:8802)"
    # an address of no interface here (TEST-NET-1) is another machine
    assert not hosts["192.0.2.7"].local and not is_local("192.0.2.7")
    assert parse_hosts(None) == {} and parse_hosts("") == {}
    assert split_device("a:nvme0n1", hosts) == (hosts["a"], "nvme0n1")
    assert split_device("nvme0n1", hosts) == (None, "nvme0n1")
    assert split_device("./x:y.img", hosts) == (None, "./x:y.img")  # a path, not a host


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("a=10.0.0.5,a=10.0.0.6", "names 'a' twice"),
        ("a=10.0.0.5:99999", "no usable port"),
        ("a=10.0.0.5:x", "no usable port"),
        ("a=", "has no address"),
        ("a=10.0.0.5,b=10.0.0.5", "the same server"),
        ("a b=10.0.0.5", "not a usable host name"),
    ],
)
def test_a_bad_hosts_value_says_what_is_wrong(text: str, says: str) -> None:
    with pytest.raises(SsdcompareError, match=says):
        parse_hosts(text)


def test_a_device_on_an_unknown_host_is_an_error() -> None:
    with pytest.raises(SsdcompareError, match="no host is named 'c'; --hosts names a"):
        resolve_targets("c:nvme0n1", hosts=parse_hosts("a=192.0.2.7"))


def _remote(name: str = "a", device: str = "nvme0n1") -> Target:
    (target,) = resolve_targets(f"{name}:{device}", hosts={name: Host(name=name,
                                address="192.0.2.7", port=8765)})  # fmt: skip
    return target


def test_a_remote_device_is_taken_as_named_and_never_inspected_here() -> None:
    target = _remote()
    assert (target.name, target.path, target.kind, target.remote) == (
        "a:nvme0n1", "/dev/nvme0n1", "block", True)  # fmt: skip
    assert target.device == "nvme0n1"
    # the same name on two remote hosts is two devices; listed twice on one host is an error
    two = resolve_targets("a:sdb,b:sdb", hosts=parse_hosts("a=192.0.2.7,b=192.0.2.8"))
    assert [t.name for t in two] == ["a:sdb", "b:sdb"]
    with pytest.raises(SsdcompareError, match="same target"):
        resolve_targets("a:sdb,a:/dev/sdb", hosts=parse_hosts("a=192.0.2.7"))


def test_writing_to_a_remote_device_needs_it_named() -> None:
    target = _remote()
    with pytest.raises(SsdcompareError) as refused:
        check_write_safety([target], True, False)
    message = str(refused.value)
    assert "cannot be inspected from here" in message and "--destroy-data a:nvme0n1" in message
    assert "read-only suites (--read-only) run on any host" in message
    # a bare --destroy-data is consent for what the guard could see, not for a remote disk
    with pytest.raises(SsdcompareError, match="needs it named"):
        check_write_safety([target], True, True)
    (allowed,) = check_write_safety([target], True, ["a:nvme0n1"])
    assert allowed.kind == "remote"
    # reading needs no consent
    assert check_write_safety([target], False, False) == []


# ---------------------------------------------------------------- real servers


def _reads(tmp_path: Path, runtime: int = 1, jobs: int = 1) -> Path:
    workloads = [f"{{rw: randread, bs: 4k, iodepth: {2**k}}}" for k in range(jobs)]
    return suite_file(tmp_path, "reads", *workloads, defaults=f"{{runtime: {runtime}, size: 8m}}")


@pytest.mark.root
@pytest.mark.fio
def test_a_two_host_sweep_keeps_each_hosts_results_apart_and_labels_them(
    tmp_path: Path, two_hosts: tuple[str, list[str]]
) -> None:
    hosts, devices = two_hosts
    run = ssdcompare.run_sweep(devices, suite=str(_reads(tmp_path, runtime=2)), hosts=hosts,
                               out=tmp_path / "r", read_only=True)  # fmt: skip
    assert run.complete
    frame = run.frame()
    assert sorted(frame["label"]) == sorted(devices)
    assert set(frame["host"]) == {"a", "b"} and not frame["remote"].any()
    ports = dict(zip(frame["host"], frame["port"], strict=True))
    assert [f"{h}={'127.0.0.1' if h == 'a' else '127.0.0.2'}:{p}" for h, p in
            sorted(ports.items())] == hosts.split(",")  # fmt: skip
    assert (frame["iops"] > 0).all() and (frame["status"] == "ok").all()
    for label in devices:
        folder = run.path / "runs" / label / "randread-4k-qd1" / "r1"
        status = json.loads((folder / "status.json").read_text())
        assert any(arg.startswith("--client=127.0.0.") for arg in status["command"])
        # the server's logs came back, under the names a local run's logs have
        assert (folder / "timeseries_iops.1.log").is_file()
        assert not list(folder.glob("*.log.127.0.0.*"))
        # the server is this machine: its job processes were sampled as fio's
        cpu = json.loads((folder / "cpu.json").read_text())
        assert len(set(cpu["worker_names"])) >= 3  # client, server, the server's job
    # the seconds name each run as the frame does (its host, its device there), so the
    # report finds them and draws them
    seconds = ssdcompare.timeseries(run.path)
    keys = ["sweep", "host", "device", "job", "repeat"]
    assert {tuple(map(str, key)) for key in seconds[keys].drop_duplicates().to_numpy()} == {
        tuple(map(str, key)) for key in frame[keys].to_numpy()
    }
    html = run.report.read_text() if run.report else ""
    for label in devices:
        assert label in html
    assert html.count("IOPS over time per job") == 1
    drawn = html.partition("IOPS over time per job")[2]
    assert drawn.count('<g class="lines"><path d="M') >= 1  # the devices' lines, drawn


@pytest.mark.slow  # one of the longest: started early (tests/conftest.py)
@pytest.mark.root
@pytest.mark.fio
def test_a_host_that_goes_away_costs_only_its_own_jobs_and_a_resume_finishes(
    fio: FioInfo, tmp_path: Path
) -> None:
    out = tmp_path / "r"
    suite = _reads(tmp_path, runtime=2, jobs=2)
    with two_hosts_with_loops(fio.path, tmp_path) as (first, second, dev_a, dev_b):
        a, b = f"a:{Path(dev_a).name}", f"b:{Path(dev_b).name}"
        command = [sys.executable, "-m", "ssdcompare", "sweep", "--hosts",
                   f"a={first.spec},b={second.spec}", "--devices", f"{b},{a}", "--suite",
                   str(suite), "--read-only", "--out", str(out)]  # fmt: skip
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True)  # fmt: skip
        # b's jobs come first: kill its server once its first job is under way
        first_run = out / "runs" / b / "randread-4k-qd1" / "r1" / "jobfile.fio"
        deadline = time.monotonic() + DEADLINE_S
        while not first_run.exists() and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        second.kill()
        stdout, stderr = proc.communicate(timeout=DEADLINE_S)
        assert proc.returncode == 1, stderr
        said = stdout + stderr
        assert "Traceback" not in said
        assert f"host b ({second.spec})" in said, said
        statuses = {
            (p.parent.parent.parent.name, p.parent.parent.name): json.loads(p.read_text())
            for p in (out / "runs").glob("*/*/r1/status.json")
        }  # fmt: skip
        # the other host's results are complete
        assert [statuses[(a, job)]["status"] for job in ("randread-4k-qd1", "randread-4k-qd2")
                ] == ["ok", "ok"]  # fmt: skip
        lost = [s for (device, _), s in statuses.items() if device == b]
        assert {s["status"] for s in lost} <= {"failed", "skipped"} and lost
        assert all(f"host b ({second.spec})" in s["error"] for s in lost)
        assert any(s.get("host_lost") for s in lost)
        # the host comes back: the resume runs only what it missed
        host, port = second.spec.split(":")
        with fio_server(fio.path, host, port=int(port)):
            resumed = subprocess.run(
                [sys.executable, "-m", "ssdcompare", "sweep", "--resume", str(out)],
                capture_output=True, text=True, timeout=DEADLINE_S, check=False,
            )  # fmt: skip
        assert resumed.returncode == 0, resumed.stderr
    frame = ssdcompare.load(out)
    assert (frame["status"] == "ok").all() and len(frame) == 4


@pytest.mark.root
@pytest.mark.fio
def test_an_unreachable_or_foreign_server_is_one_clear_line(
    fio: FioInfo, tmp_path: Path, run_cli
) -> None:  # type: ignore[no-untyped-def]
    from fioservers import free_port

    suite = str(_reads(tmp_path))
    with loop_device(tmp_path / "a.img", 32 << 20) as dev:
        name = Path(dev).name
        port = free_port("127.0.0.1")
        nobody = run_cli("sweep", "--hosts", f"a=127.0.0.1:{port}", "--devices",
                         f"a:{name}", "--suite", suite, "--read-only", "--out",
                         str(tmp_path / "x"))  # fmt: skip
        assert nobody.exit_code == 2
        assert nobody.stderr.strip().splitlines() == [
            f"error: no fio server answers on host a (127.0.0.1:{port}) (connect: Connection "
            "refused): start one there with `fio --server` (or `ssdcompare serve`), the same "
            "fio version"
        ]
        with other_protocol_server() as other:
            foreign = run_cli("sweep", "--hosts", f"a=127.0.0.1:{other}", "--devices",
                              f"a:{name}", "--suite", suite, "--read-only", "--out",
                              str(tmp_path / "y"))  # fmt: skip
        assert foreign.exit_code == 2
        (line,) = foreign.stderr.strip().splitlines()
        assert (
            f"host a (127.0.0.1:{other}) runs a fio that speaks another client/server "
            "protocol than this one (client/server version mismatch (999 != " in line
        )
        assert line.endswith("install the same fio version on both")
    assert not (tmp_path / "x").exists() and not (tmp_path / "y").exists()


@pytest.mark.root
@pytest.mark.fio
def test_a_remote_host_is_asked_for_its_devices_written_only_when_named_and_judged_honestly(
    fio: FioInfo, tmp_path: Path
) -> None:
    writes = suite_file(tmp_path, "writes", "{rw: randwrite, bs: 4k, iodepth: 4}",
                        defaults="{runtime: 1, size: 8m}")  # fmt: skip
    with fio_server(fio.path, "127.0.0.2") as server, \
            loop_device(tmp_path / "a.img", 32 << 20) as dev:  # fmt: skip
        # this machine's server, taken as another machine's: nothing is inspected from here
        hosts = {"far": Host(name="far", address="127.0.0.2", port=server.port, local=False)}
        missing = make_plan(
            str(writes), ["far:nosuchdevice"], PlanOptions(hosts=hosts), require_fio=True
        )
        with pytest.raises(SsdcompareError) as absent:
            sweep.start(missing, tmp_path / "m", destroy_data=["far:nosuchdevice"])
        assert str(absent.value) == (f"far:nosuchdevice: /dev/nosuchdevice cannot be opened on "
                                     f"host far (127.0.0.2:{server.port}): no such device or "
                                     "file there")  # fmt: skip
        device = f"far:{Path(dev).name}"
        plan = make_plan(str(writes), [device], PlanOptions(hosts=hosts), require_fio=True)
        for consent in (False, True):
            with pytest.raises(SsdcompareError, match=f"--destroy-data {device}"):
                sweep.start(plan, tmp_path / "refused", destroy_data=consent)
        with pytest.raises(SsdcompareError, match="not a device of this sweep"):
            sweep.start(plan, tmp_path / "typo", destroy_data=["far:loop999"])
        assert not (tmp_path / "refused").exists()
        results, allowed = sweep.start(plan, tmp_path / "r", destroy_data=[device])
        assert [f.kind for f in allowed] == ["remote"]
        outcome = sweep.run(plan, results)
    assert outcome.count("ok") == 1
    row = ssdcompare.load(results.path).iloc[0]
    assert bool(row["remote"]) and row["host"] == "far" and row["iops"] > 0
    # no samples from another machine: fio's own figures decide, or the verdict is unknown
    assert not (results.path / "runs" / device / "randwrite-4k-qd4" / "r1" / "cpu.json").exists()
    assert row["verdict"] in ("unknown", "cpu")
    if row["verdict"] == "unknown":
        assert row["verdict_reason"].startswith("host far is another machine, not sampled")


@pytest.mark.fio
def test_serve_runs_a_server_a_sweep_can_use_and_stops_it(fio: FioInfo, tmp_path: Path) -> None:
    data = tmp_path / "data.img"
    data.write_bytes(b"\0" * (1 << 20))
    from fioservers import free_port, listening

    port = free_port("127.0.0.3")
    proc = subprocess.Popen(
        [sys.executable, "-m", "ssdcompare", "serve", "--allow-root", "--address", "127.0.0.3",
         "--port",
         str(port)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + DEADLINE_S
        while not listening("127.0.0.3", port) and time.monotonic() < deadline:
            time.sleep(0.05)
        host = Host(name="c", address="127.0.0.3", port=port, local=True)
        check_hosts(fio, [Target(spec="c:data", name="c:data.img", path=str(data),
                                 kind="file", size_bytes=None, host=host)])  # fmt: skip
    finally:
        proc.send_signal(signal.SIGTERM)
        _, stderr = proc.communicate(timeout=DEADLINE_S)
    assert proc.returncode == 128 + signal.SIGTERM, stderr
    assert "No authentication" in stderr and "fio server stopped" in stderr
    assert not listening("127.0.0.3", port)


def test_parallel_hosts_needs_every_device_on_a_host_of_its_own(tmp_path: Path) -> None:
    from ssdcompare.run.plan import check_parallel

    hosts = parse_hosts("a=192.0.2.7,b=192.0.2.8,c=192.0.2.7:8766")
    (tmp_path / "x.img").write_bytes(b"\0" * 4096)
    with pytest.raises(SsdcompareError, match="is on no host"):
        check_parallel(resolve_targets(f"a:sda,{tmp_path / 'x.img'}", hosts=hosts))
    with pytest.raises(SsdcompareError, match="group across hosts"):
        check_parallel(resolve_targets("a:sda+b:sda,b:sdb", hosts=hosts))
    check_parallel(resolve_targets("a:sda,b:sda,a:sdb", hosts=hosts))
    # each server's client writes its logs into its own device's folder: one address will do
    check_parallel(resolve_targets("a:sda,c:sda", hosts=hosts))


@pytest.mark.root
@pytest.mark.fio
def test_parallel_hosts_run_each_job_on_every_host_at_once_and_keep_results_apart(
    tmp_path: Path, two_hosts: tuple[str, list[str]]
) -> None:
    hosts, devices = two_hosts
    run = ssdcompare.run_sweep(devices, suite=str(_reads(tmp_path, runtime=2, jobs=2)),
                               hosts=hosts, parallel_hosts=True, out=tmp_path / "r",
                               read_only=True)  # fmt: skip
    assert run.complete
    frame = run.frame()
    for job in ("randread-4k-qd1", "randread-4k-qd2"):
        folders = [run.path / "runs" / device / job / "r1" for device in devices]
        statuses = [json.loads((f / "status.json").read_text()) for f in folders]
        # started together, one fio client for each server, each with its own output
        assert statuses[0]["started_at"] == statuses[1]["started_at"]
        for device, folder, status in zip(devices, folders, statuses, strict=True):
            address = "127.0.0.1" if device.startswith("a:") else "127.0.0.2"
            (client,) = [arg for arg in status["command"] if arg.startswith("--client=")]
            assert client.startswith(f"--client={address},")
            assert str(folder / "jobfile.fio") in status["command"]
            (entry,) = parse_fio_file(folder / "fio.json").jobs
            assert entry.hostname == address
            # its own server's logs in its own folder
            assert (folder / "timeseries_iops.1.log").is_file()
            assert (folder / "cpu.json").is_file()
            row = frame[(frame["label"] == device) & (frame["job"] == job)].iloc[0]
            assert row["iops"] == pytest.approx(entry.directions["read"].iops)


@pytest.mark.root
@pytest.mark.fio
def test_in_parallel_a_host_that_goes_away_costs_only_its_own_runs(
    fio: FioInfo, tmp_path: Path
) -> None:
    out = tmp_path / "r"
    with two_hosts_with_loops(fio.path, tmp_path) as (first, second, dev_a, dev_b):
        a, b = f"a:{Path(dev_a).name}", f"b:{Path(dev_b).name}"
        plan = make_plan(str(_reads(tmp_path, runtime=1, jobs=2)), [a, b],
                         PlanOptions(hosts=f"a={first.spec},b={second.spec}", read_only=True,
                                     parallel_hosts=True), require_fio=True)  # fmt: skip
        results, _ = sweep.start(plan, out)
        second.kill()  # asked and answering at the start, gone before the first run
        outcome = sweep.run(plan, results)
    statuses = {(s.target, s.job): s for s in outcome.statuses}
    assert [statuses[(a, j)].status for j in ("randread-4k-qd1", "randread-4k-qd2")] == \
        ["ok", "ok"]  # fmt: skip
    lost = [statuses[(b, j)] for j in ("randread-4k-qd1", "randread-4k-qd2")]
    assert lost[0].status == "failed" and lost[0].host_lost
    assert f"host b ({second.spec})" in (lost[0].error or "")
    assert lost[1].status == "skipped" and f"host b ({second.spec})" in (lost[1].error or "")


def test_host_names_are_usable_and_this_machine_is_recognised() -> None:
    unnamed = parse_hosts("127.0.0.1:23101")
    assert list(unnamed) == ["127.0.0.1"] and unnamed["127.0.0.1"].port == 23101
    assert split_device("127.0.0.1:loop3", unnamed)[0] == unnamed["127.0.0.1"]
    with pytest.raises(SsdcompareError, match="give servers on one address names"):
        parse_hosts("127.0.0.1:23101,127.0.0.1:23102")
    with pytest.raises(SsdcompareError, match="not a usable host name"):
        parse_hosts("a:b=10.0.0.5")
    with pytest.raises(SsdcompareError, match="give .* a name"):
        parse_hosts("[::1]:8765")
    assert parse_hosts("six=[::1]:8765")["six"].client == "ip6:::1,8765"
    for address in ("0.0.0.0", "::ffff:127.0.0.1", "127.0.0.2"):
        assert is_local(address), address


def test_only_the_clients_own_lines_tell_of_a_lost_server() -> None:
    host = Host(name="a", address="10.0.0.5", port=8765)
    # a file named like an error, in the JSON or a server's line, is no error
    quiet = ('<vm> a: Laying out IO file "/x/timed out/disconnected.img"\n'
             '{"filename" : "/x/timed out/Connection refused.img"}')  # fmt: skip
    assert host_problem(quiet, host) is None
    refused = "fio: connect: Connection refused\nfio: failed to connect to 10.0.0.5:8765"
    assert (host_problem(refused, host) or "").startswith("no fio server answers on host a")
    gone = "client: host=10.0.0.5 disconnected"
    assert "went away" in (host_problem(gone, host) or "")
    # at the first question, a listener that hangs up is no fio server
    assert "took the connection and hung up" in (host_problem(gone, host, probing=True) or "")


@pytest.mark.fio
def test_writing_through_a_server_here_needs_the_device_named(
    fio: FioInfo, tmp_path: Path
) -> None:
    writes = suite_file(tmp_path, "w", "{rw: randwrite, bs: 4k, iodepth: 1}",
                        defaults="{runtime: 1}")  # fmt: skip
    new = tmp_path / "new.img"
    with fio_server(fio.path, "127.0.0.1") as server:
        hosts = f"h=127.0.0.1:{server.port}"
        plan = make_plan(str(writes), [f"h:{new}"], PlanOptions(hosts=hosts, size_bytes=8 << 20),
                         require_fio=True)  # fmt: skip
        # a server at this machine's address may still open another machine's disk
        for consent in (False, True):
            with pytest.raises(SsdcompareError, match="needs it named, e.g. --destroy-data"):
                sweep.start(plan, tmp_path / "refused", destroy_data=consent)
        # a new file is not there to be asked about: the server's fio makes it
        results, _ = sweep.start(plan, tmp_path / "r", destroy_data=["h:new.img"])
        outcome = sweep.run(plan, results)
    assert outcome.count("ok") == 1 and new.stat().st_size == 8 << 20


@pytest.mark.root
@pytest.mark.fio
def test_a_job_a_server_refuses_fails_with_the_servers_words(fio: FioInfo, tmp_path: Path) -> None:
    writes = suite_file(tmp_path, "w", "{rw: randwrite, bs: 4k, iodepth: 1}",
                        defaults="{runtime: 1, size: 4m}")  # fmt: skip
    mount = tmp_path / "mnt"
    mount.mkdir()
    with fio_server(fio.path, "127.0.0.2") as server, \
            loop_device(tmp_path / "a.img", 32 << 20) as dev:  # fmt: skip
        subprocess.run(["mkfs.ext4", "-q", "-F", dev], check=True)
        subprocess.run(["mount", dev, str(mount)], check=True)
        try:
            # taken as another machine's: the guard here cannot see the mount, fio can
            hosts = {"far": Host(name="far", address="127.0.0.2", port=server.port)}
            device = f"far:{Path(dev).name}"
            plan = make_plan(str(writes), [device], PlanOptions(hosts=hosts), require_fio=True)
            results, _ = sweep.start(plan, tmp_path / "r", destroy_data=[device])
            outcome = sweep.run(plan, results)
        finally:
            subprocess.run(["umount", str(mount)], check=False)
    (status,) = outcome.statuses
    assert status.status == "failed" and "no result for randwrite-4k-qd1" in (status.error or "")
    assert "mounted" in (status.error or "")


@pytest.mark.fio
def test_a_resume_needs_every_overwritten_device_named_again(fio: FioInfo, tmp_path: Path) -> None:
    writes = suite_file(tmp_path, "w", "{rw: randwrite, bs: 4k, iodepth: 1}",
                        defaults="{runtime: 1, size: 4m}")  # fmt: skip
    first, second = tmp_path / "one.img", tmp_path / "two.img"
    for image in (first, second):
        image.write_bytes(b"\0" * (8 << 20))
    subprocess.run(["mkfs.ext4", "-q", "-F", str(second)], check=True)
    run = ssdcompare.run_sweep(f"{first},{second}", suite=str(writes), out=tmp_path / "r",
                               destroy_data=["two.img"], report=False)  # fmt: skip
    assert run.complete
    (run.path / "runs" / "two.img" / "randwrite-4k-qd1" / "r1" / "status.json").unlink()
    with pytest.raises(SsdcompareError, match="overwriting two.img; name it again"):
        ssdcompare.run_sweep(resume=run.path, destroy_data=["one.img"], report=False)
    assert ssdcompare.run_sweep(resume=run.path, destroy_data=["two.img"], report=False).complete


@pytest.mark.fio
def test_serve_refuses_a_port_in_use(fio: FioInfo) -> None:
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.3", 0))
        taken.listen(1)
        port = taken.getsockname()[1]
        done = subprocess.run(
            [sys.executable, "-m", "ssdcompare", "serve", "--allow-root", "--address", "127.0.0.3",
         "--port",
             str(port)], capture_output=True, text=True, timeout=DEADLINE_S, check=False,
        )  # fmt: skip
    assert done.returncode == 2 and f"cannot listen on 127.0.0.3:{port}" in done.stderr


def test_of_several_servers_only_the_one_named_is_lost() -> None:
    a = Host(name="a", address="127.0.0.1", port=8801, local=True)
    b = Host(name="b", address="127.0.0.2", port=8802, local=True)
    said = "client: host=127.0.0.2 disconnected\nfio: failed to connect to 127.0.0.2:8802"
    assert host_problem(said, a, alone=False) is None
    assert host_problem(said, b, alone=False) is not None


@pytest.mark.root
@pytest.mark.fio
def test_in_parallel_a_job_one_server_refuses_fails_only_there(
    fio: FioInfo, tmp_path: Path
) -> None:
    writes = suite_file(tmp_path, "w", "{rw: randwrite, bs: 4k, iodepth: 1}",
                        defaults="{runtime: 1, size: 4m}")  # fmt: skip
    mount = tmp_path / "mnt"
    mount.mkdir()
    with two_hosts_with_loops(fio.path, tmp_path) as (first, second, dev_a, dev_b):
        subprocess.run(["mkfs.ext4", "-q", "-F", dev_b], check=True)
        subprocess.run(["mount", dev_b, str(mount)], check=True)
        try:
            # taken as other machines': the guard here cannot see the mount, b's fio can
            hosts = {name: Host(name=name, address=server.address, port=server.port)
                     for name, server in (("a", first), ("b", second))}  # fmt: skip
            a, b = f"a:{Path(dev_a).name}", f"b:{Path(dev_b).name}"
            plan = make_plan(str(writes), [a, b], PlanOptions(hosts=hosts, parallel_hosts=True),
                             require_fio=True)  # fmt: skip
            results, _ = sweep.start(plan, tmp_path / "r", destroy_data=[a, b])
            outcome = sweep.run(plan, results)
        finally:
            subprocess.run(["umount", str(mount)], check=False)
    statuses = {s.target: s for s in outcome.statuses}
    assert statuses[a].status == "ok"
    assert statuses[b].status == "failed" and not statuses[b].host_lost
    assert "no result for randwrite-4k-qd1" in (statuses[b].error or "")
    assert "mounted" in (statuses[b].error or "")


def _stop_when_reading(server: psutil.Process, stopped: list[psutil.Process]) -> None:
    """Once a job process of `server` has read from its device, SIGSTOP the server and all
    its processes: a host that hangs mid-job (its machine frozen, its network gone quiet)."""
    deadline = time.monotonic() + DEADLINE_S
    while time.monotonic() < deadline:
        try:
            family = [server, *server.children(recursive=True)]
            if any(p.io_counters().read_bytes >= 1 << 20 for p in family[1:]):
                for proc in family:
                    proc.suspend()
                    stopped.append(proc)
                return
        except psutil.Error:
            pass
        time.sleep(0.01)


@pytest.mark.slow  # one of the longest: started early (tests/conftest.py)
@pytest.mark.root
@pytest.mark.fio
def test_in_parallel_a_hung_host_costs_only_its_own_runs(
    fio: FioInfo, tmp_path: Path, two_hosts: tuple[str, list[str]],
    monkeypatch: pytest.MonkeyPatch,
) -> None:  # fmt: skip
    from ssdcompare.run import runner

    # a fio client whose server hangs ignores SIGTERM: kill it after 2 s, not the usual 10
    monkeypatch.setattr(runner, "TERM_GRACE_S", 2.0)
    hosts, devices = two_hosts
    a, b = devices
    jobs = ["randread-4k-qd1", "randread-4k-qd2"]
    plan = make_plan(str(_reads(tmp_path, runtime=1, jobs=2)), devices,
                     PlanOptions(hosts=hosts, read_only=True, parallel_hosts=True),
                     require_fio=True)  # fmt: skip
    results, _ = sweep.start(plan, tmp_path / "r")
    host_b = parse_hosts(hosts)["b"]
    (server,) = [psutil.Process(pid) for pid in local_server_pids(host_b)]
    stopped: list[psutil.Process] = []
    stopper = threading.Thread(target=_stop_when_reading, args=(server, stopped))
    stopper.start()
    try:
        # long enough for a 1 s job however slow this machine is today
        outcome = sweep.run(plan, results, job_timeout_s=8)
    finally:
        stopper.join()
        for proc in stopped:  # then the host is rebooted: its server starts anew
            with contextlib.suppress(psutil.Error):
                proc.kill()
                proc.resume()
    assert stopped, "host b's server was never seen reading"
    statuses = {(s.target, s.job): s for s in outcome.statuses}
    # the healthy host's runs are measured and kept, its later job runs
    assert [statuses[(a, j)].status for j in jobs] == ["ok", "ok"], outcome.statuses
    for job in jobs:
        entries = parse_fio_file(results.path / "runs" / a / job / "r1" / "fio.json").jobs
        assert entries and all(e.hostname == "127.0.0.1" and e.moved for e in entries)
    # the hung host's run fails as a lost host; its later job is skipped
    hung = statuses[(b, jobs[0])]
    assert hung.status == "failed" and hung.host_lost and hung.lost_hosts == ["b"], hung
    assert statuses[(b, jobs[1])].status == "skipped"
    assert "host b" in (statuses[(b, jobs[1])].error or "")
    # once it answers again, a resume runs what it missed and nothing else
    with fio_server(fio.path, host_b.address, host_b.port):
        again = sweep.run(plan, results, job_timeout_s=60)
    assert sorted((s.target, s.job, s.status) for s in again.statuses) == [
        (b, jobs[0], "ok"), (b, jobs[1], "ok")]  # fmt: skip


def _reading(server: psutil.Process) -> bool:
    """A job process of this machine's fio server has read from its device."""
    try:
        return any(p.io_counters().read_bytes >= 1 << 20 for p in server.children(recursive=True))
    except psutil.Error:
        return False


@pytest.mark.root
@pytest.mark.fio
def test_in_parallel_ctrl_c_stops_every_host_and_keeps_what_each_measured(
    tmp_path: Path, two_hosts: tuple[str, list[str]]
) -> None:
    hosts, devices = two_hosts
    out = tmp_path / "r"
    proc = subprocess.Popen(
        [sys.executable, "-m", "ssdcompare", "sweep", "--hosts", hosts, "--devices",
         ",".join(devices), "--parallel-hosts", "--read-only", "--suite",
         str(Path(__file__).parent / "suites" / "long-read.yaml"), "--out", str(out)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    servers = [psutil.Process(pid) for name in ("a", "b")
               for pid in local_server_pids(parse_hosts(hosts)[name])]  # fmt: skip
    try:
        wait_for(lambda: all(_reading(s) for s in servers), "both servers to read")
    finally:
        proc.send_signal(signal.SIGINT)
        _, stderr = proc.communicate(timeout=DEADLINE_S)
    assert proc.returncode == 130, stderr
    assert "--resume" in stderr and "Traceback" not in stderr
    for device in devices:
        folder = out / "runs" / device / "randread-4k-qd1" / "r1"
        assert json.loads((folder / "status.json").read_text())["status"] == "interrupted"
        (entry,) = parse_fio_file(folder / "fio.json").jobs  # its partial results are kept
        assert entry.directions["read"].iops > 0
    assert not fio_processes(out)


@pytest.mark.parametrize("address", ["0", "0x0", "0.0", "::0"])
def test_every_interface_spelled_otherwise_is_refused(address: str) -> None:
    """fio's server has no authentication: listening on every interface is asked for plainly
    (0.0.0.0 or ::), never by a spelling that only looks like another address."""
    done = subprocess.run(
        [sys.executable, "-m", "ssdcompare", "serve", "--allow-root", "--address", address,
         "--port", "1"], capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert f"--address {address} means every interface" in done.stderr
