"""What `read_fio` may read: a fio output someone hands over is named in errors, never quoted,
and the paths it is given are followed without trusting links someone else made and never
into /proc or /sys."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from plantedlinks import plant_link, shared_folder

import ssdcompare
from ssdcompare.errors import SsdcompareError
from ssdcompare.regularfile import RefusedFile, read_regular

DATA = Path(__file__).parent / "data"
KEY_LINE = "-----BEGIN OPENSSH PRIVATE KEY-----"


@pytest.fixture
def shared() -> Iterator[Path]:
    with shared_folder() as folder:
        yield folder


def refusal(path: str | Path | list[Path]) -> str:
    with pytest.raises(SsdcompareError) as raised:
        ssdcompare.read_fio(path)
    return str(raised.value)


def test_a_file_that_is_no_json_is_described_never_quoted(tmp_path: Path) -> None:
    key = tmp_path / "id_ed25519"
    key.write_text(f"{KEY_LINE}\nb3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQ\n")
    message = refusal(key)
    assert "not JSON" in message and "begins with text, not '{'" in message
    assert "BEGIN" not in message and "b3Bl" not in message
    assert str(key) in message  # the file is named


def test_a_file_of_bytes_is_described_never_quoted(tmp_path: Path) -> None:
    blob = tmp_path / "blob.json"
    blob.write_bytes(b"\x7fELF secret-token-123\x00\x01")
    message = refusal(blob)
    assert "not JSON" in message and "secret-token-123" not in message and "ELF" not in message


@pytest.mark.root  # plants the link as another user
def test_a_link_someone_else_planted_in_a_glob_is_never_followed(
    tmp_path: Path, shared: Path
) -> None:
    key = tmp_path / "id_ed25519"
    key.write_text(f"{KEY_LINE}\nsecret\n")
    key.chmod(0o600)
    shutil.copy(DATA / "randrw-latpct-json.json", shared / "run0.json")
    plant_link(key, shared / "run1.json")
    message = refusal(str(shared / "*.json"))
    assert "run1.json" in message and "not followed" in message and "nobody" in message
    assert "BEGIN" not in message and "secret" not in message.replace("secret key", "")


def test_ones_own_link_to_a_fio_output_is_followed(tmp_path: Path) -> None:
    (tmp_path / "mine.json").symlink_to(DATA / "randrw-latpct-json.json")
    assert len(ssdcompare.read_fio(tmp_path / "mine.json")) == 2


@pytest.mark.parametrize("path", ["/proc/self/environ", "/proc/self/cmdline",
                                  "/sys/kernel/uevent_seqnum"])  # fmt: skip
def test_nothing_under_proc_or_sys_is_read(path: str) -> None:
    message = refusal(path)
    assert "the kernel's view of itself" in message
    assert "PATH=" not in message and os.environ["PATH"] not in message


def test_a_file_in_proc_is_refused_however_the_path_leads_there(tmp_path: Path) -> None:
    """Read by itself (no walk first), a file is refused by where the open file is."""
    (tmp_path / "env.txt").symlink_to("/proc/self/environ")
    with pytest.raises(RefusedFile, match="is in /proc, the kernel's view of itself"):
        read_regular(tmp_path / "env.txt", 1 << 20)


def test_no_link_leads_into_proc(tmp_path: Path) -> None:
    (tmp_path / "environ.json").symlink_to("/proc/self/environ")
    (tmp_path / "stdin.json").symlink_to("/dev/stdin")
    for name in ("environ.json", "stdin.json"):
        message = refusal(tmp_path / name)
        assert "leads into /proc (through" in message and "PATH=" not in message, name


def test_json_that_is_no_fio_output_is_described_never_quoted(tmp_path: Path) -> None:
    config = tmp_path / "config.json"
    config.write_text('{"auths": {"registry": {"auth": "c2VjcmV0OnRva2Vu"}}, "token-x1": 1}\n')
    message = refusal(config)
    assert "JSON, but not fio output (2 top-level keys;" in message
    assert "auths" not in message and "c2Vj" not in message and "token-x1" not in message
    named = tmp_path / "named.json"
    named.write_text('{"jobs": [{"jobname": "c2VjcmV0OnRva2Vu", "groupid": 0}]}\n')
    assert "c2Vj" not in refusal(named)
