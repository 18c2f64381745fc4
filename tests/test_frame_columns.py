"""Frame columns: fio server ports, completion vs total latency, and the documented column list."""

from __future__ import annotations

import json
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from suitefiles import suite_file

import ssdcompare
from ssdcompare.analysis import frame as frame_module
from ssdcompare.fio.binary import FioInfo

DATA = Path(__file__).parent / "data"


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def two_servers(fio: FioInfo, tmp_path: Path) -> Iterator[list[int]]:
    """Two fio servers on 127.0.0.1, on two ports; stopped afterwards."""
    ports = [_free_port(), _free_port()]
    servers = [
        subprocess.Popen(
            [str(fio.path), f"--server=ip:127.0.0.1,{port}"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for port in ports
    ]
    try:
        for port in ports:  # wait until each one listens
            for _ in range(100):
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
                    break
                except OSError:
                    time.sleep(0.05)
        yield ports
    finally:
        for server in servers:
            server.terminate()
            server.wait(timeout=10)


def test_two_fio_servers_on_one_host_are_told_apart(
    fio: FioInfo, two_servers: list[int], tmp_path: Path
) -> None:
    out = tmp_path / "two-servers.json"
    clients = [f"--client=127.0.0.1,{port}" for port in two_servers]
    with out.open("w") as handle:
        subprocess.run([str(fio.path), *clients, "--output-format=json",
                        str(DATA / "jobs" / "client-server.fio")],
                       stdout=handle, check=True, timeout=60)  # fmt: skip
    frame = ssdcompare.read_fio(out)
    assert frame["port"].dtype == "Int64"
    assert sorted(frame["port"]) == sorted(two_servers)
    assert set(frame["host"]) == {"127.0.0.1"}
    assert sorted(frame["label"]) == sorted(f"127.0.0.1:{port}" for port in two_servers)
    summary = ssdcompare.job_summary(frame)
    assert len(summary) == 2  # one result per server, not one merged result


def test_server_port_from_a_recording_and_labels_only_when_needed(tmp_path: Path) -> None:
    raw = json.loads((DATA / "client-server-numjobs2-json.json").read_text())
    one = ssdcompare.read_fio(DATA / "client-server-numjobs2-json.json")
    port = raw["client_stats"][0]["port"]
    assert one["port"].tolist() == [port] and one["label"].tolist() == ["127.0.0.1"]
    # the same recording with a second server on the same host
    second = [dict(e, port=port + 1) for e in raw["client_stats"] if e["jobname"] != "All clients"]
    raw["client_stats"] = raw["client_stats"][:-1] + second + raw["client_stats"][-1:]
    path = tmp_path / "second-server.json"
    path.write_text(json.dumps(raw))
    two = ssdcompare.read_fio(path)
    assert two["label"].tolist() == [f"127.0.0.1:{port}", f"127.0.0.1:{port + 1}"]
    # not client/server: no port
    plain = ssdcompare.read_fio(DATA / "randrw-latpct-json.json")
    assert plain["port"].isna().all() and plain["port"].dtype == "Int64"


def test_completion_and_submission_latency_have_their_own_columns() -> None:
    # lat_percentiles=1: lat_* is total latency; clat_* and slat_* come from their own objects
    frame = ssdcompare.read_fio(DATA / "randrw-latpct-json.json")
    raw = json.loads((DATA / "randrw-latpct-json.json").read_text())["jobs"][0]["read"]
    read = frame[frame["direction"] == "read"].iloc[0]
    assert read["lat_source"] == "lat"
    assert read["lat_mean_us"] == pytest.approx(raw["lat_ns"]["mean"] / 1000)
    assert read["clat_mean_us"] == pytest.approx(raw["clat_ns"]["mean"] / 1000)
    assert read["clat_p99_us"] == pytest.approx(raw["clat_ns"]["percentile"]["99.000000"] / 1000)
    assert read["slat_mean_us"] == pytest.approx(raw["slat_ns"]["mean"] / 1000)
    assert read["lat_mean_us"] > read["clat_mean_us"]
    for column in ("clat_mean_us", "clat_p99_us", "slat_mean_us"):
        assert frame[column].dtype == "float64"


def test_with_fio_defaults_lat_columns_are_completion_latency() -> None:
    # fio's default: percentiles for clat only, so lat_* follows clat (as in older results)
    frame = ssdcompare.read_fio(DATA / "randread-libaio-jsonplus-normal.json")
    read = frame[frame["direction"] == "read"].iloc[0]
    assert read["lat_source"] == "clat"
    assert read["lat_mean_us"] == read["clat_mean_us"]
    assert read["lat_p99_us"] == read["clat_p99_us"]


def test_sync_rows_have_no_completion_or_submission_latency() -> None:
    frame = ssdcompare.read_fio(DATA / "fdatasync-write-jsonplus.json")
    sync = frame[frame["direction"] == "sync"].iloc[0]
    assert sync["lat_mean_us"] > 0
    assert pd.isna(sync["clat_mean_us"]) and pd.isna(sync["slat_mean_us"])
    assert frame["fdatasync"].tolist() == [1, 1]  # from the job's fdatasync option


def test_every_column_is_documented_with_what_lat_means() -> None:
    from ssdcompare.analysis.columns import BY_NAME

    for column in [*frame_module.COLUMNS, "label"]:  # in the registry, with its source
        assert BY_NAME[column].source.strip(), column
    doc = frame_module.__doc__ or ""
    assert "ssdcompare.analysis.columns" in doc and "clat" in doc and "lat_percentiles=1" in doc
    assert "completion latency (clat)" in doc  # what lat_* means for older results
    columns = frame_module.COLUMNS
    assert columns.index("fdatasync") == columns.index("fsync") + 1
    assert columns.index("port") == columns.index("host") + 1


@pytest.mark.fio
def test_a_sweep_with_unified_rw_reporting_has_a_mixed_row_with_figures(tmp_path: Path) -> None:
    suite = suite_file(tmp_path, "unified", "{rw: randrw, bs: 4k, iodepth: 4, extra: "
                       "{unified_rw_reporting: 1}}", defaults="{runtime: 1}")  # fmt: skip
    run = ssdcompare.run_sweep(
        str(tmp_path / "t.img"), suite=str(suite), size="16m", out=tmp_path / "results",
        allow_options=["unified_rw_reporting"], report=False,
    )  # fmt: skip
    frame = run.frame()
    assert frame["direction"].tolist() == ["mixed"]
    assert frame["iops"].iloc[0] > 0 and frame["total_ios"].iloc[0] > 0


@pytest.mark.fio
def test_a_size_capped_job_moves_exactly_its_bytes(tmp_path: Path) -> None:
    suite = suite_file(tmp_path, "capped", "{rw: read, bs: 128k, runtime: 60, io_size: 8m}")
    run = ssdcompare.run_sweep(str(tmp_path / "t.img"), suite=str(suite), size="16m",
                               out=tmp_path / "results", report=False)  # fmt: skip
    row = run.frame().iloc[0]
    assert row["io_size_bytes"] == 8 << 20 and row["io_bytes"] == 8 << 20
    assert row["job"] == "read-128k-qd1-io8m"
