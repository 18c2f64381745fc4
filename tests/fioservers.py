"""Real fio servers for the tests (`fio --server` on a loopback address and a free port),
started and stopped by the tests themselves; and, for the one failure real fio cannot
produce here, a listener that answers fio's client in another protocol version.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import struct
import subprocess
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import psutil
from blockdevs import loop_device

START_DEADLINE_S = 30.0


def free_port(address: str) -> int:
    with socket.socket() as sock:
        sock.bind((address, 0))
        return int(sock.getsockname()[1])


@dataclass
class Server:
    address: str
    port: int
    process: subprocess.Popen

    @property
    def spec(self) -> str:
        return f"{self.address}:{self.port}"

    def kill(self) -> None:
        """Stop the server and every process it forked (a connection's, a job's), as a host
        going away. The server is frozen first: it could otherwise fork for a connection
        between the listing of its children and its own end, and that child would run the
        job on alone."""
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.process.pid, signal.SIGSTOP)
        for _ in range(10):  # a connection's process may fork a job's meanwhile: again
            try:
                children = psutil.Process(self.process.pid).children(recursive=True)
            except psutil.Error:
                break
            alive = [c for c in children if _running(c)]
            if not alive:
                break  # killed ones stay zombies until the frozen server is gone: no waiting
            for child in alive:
                with contextlib.suppress(psutil.Error):
                    child.kill()
            time.sleep(0.05)
        self.process.kill()
        self.process.wait(timeout=30)


def _running(process: psutil.Process) -> bool:
    try:
        return process.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def listening(address: str, port: int) -> bool:
    with socket.socket() as sock:
        sock.settimeout(1.0)
        return sock.connect_ex((address, port)) == 0


@contextlib.contextmanager
def fio_server(
    fio_path: str, address: str = "127.0.0.1", port: int | None = None
) -> Iterator[Server]:
    """A `fio --server` of our own on `address` and a free port (or `port`); stopped after."""
    port = port or free_port(address)
    process = subprocess.Popen(
        [fio_path, f"--server=ip:{address},{port}"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL,
        start_new_session=True,
    )  # fmt: skip
    server = Server(address, port, process)
    try:
        deadline = time.monotonic() + START_DEADLINE_S
        while not listening(address, port):
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"fio --server on {address}:{port} did not start")
            time.sleep(0.05)
        yield server
    finally:
        if process.poll() is None:
            server.kill()


@contextlib.contextmanager
def two_hosts_with_loops(fio_path: str, folder: Path) -> Iterator[tuple[Server, Server, str, str]]:
    """Two fio servers (127.0.0.1 and 127.0.0.2) and a new loop device for each."""
    with (
        fio_server(fio_path, "127.0.0.1") as first,
        fio_server(fio_path, "127.0.0.2") as second,
        loop_device(folder / "a.img", 32 << 20) as dev_a,
        loop_device(folder / "b.img", 32 << 20) as dev_b,
    ):
        yield first, second, dev_a, dev_b


def _crc16(data: bytes) -> int:
    """fio's crc16 (lib/crc16.c: CRC-16 with polynomial 0x8005, reflected, seed 0)."""
    crc = 0
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0xA001 if crc & 1 else crc >> 1
    return crc


@contextlib.contextmanager
def other_protocol_server(version: int = 999, address: str = "127.0.0.1") -> Iterator[int]:
    """A listener that answers every fio client with a command of protocol `version`, as a
    fio server of another release does: the real fio client then refuses it. Yields the port."""
    listener = socket.socket()
    listener.bind((address, 0))
    listener.listen(4)
    listener.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            with conn:
                # version, opcode (a probe reply), flags, tag, pdu_len; then the two CRCs
                head = struct.pack("<HHIQI", version, 8, 0, 0, 0)
                conn.sendall(head + struct.pack("<HH", _crc16(head), 0))
                # read what the client says until it hangs up: closing first would end
                # it by SIGPIPE before it says why it gave up
                with contextlib.suppress(OSError):
                    conn.settimeout(10)
                    while conn.recv(4096):
                        pass

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield int(listener.getsockname()[1])
    finally:
        stop.set()
        thread.join(timeout=5)
        listener.close()
