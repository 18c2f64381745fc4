"""What `--hosts` means: the machines whose fio servers run jobs, and which of them are this one.

`--hosts a=10.0.0.5,b=10.0.0.6:8766` names two hosts (a name is optional: `--hosts 10.0.0.5`
names the host by its address, then `10.0.0.5:nvme0n1`; an IPv6 host needs a name); each
runs `fio --server` (port 8765 unless given), and
ssdcompare drives it as a fio client. `--devices a:nvme0n1` is then nvme0n1 on host a; a
device without a host name is on this machine.

A host whose address is this machine's own (127.0.0.1, any loopback address, 0.0.0.0, or an
address of one of its interfaces) is `local`: its devices are taken as this machine's, so the
safety guard, the device's identity and the CPU sampler apply to them too. Any other host is
remote: nothing of it can be inspected from here. Either way a write through a server needs
the device named in --destroy-data (see ssdcompare.target.guard): a server at this machine's
address may still open another machine's disk (a tunnel, a container).
"""

from __future__ import annotations

import functools
import ipaddress
import re
import socket

from pydantic import BaseModel, ConfigDict

from ssdcompare.errors import SsdcompareError

DEFAULT_PORT = 8765  # fio's own default for --server
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*\Z")


class Host(BaseModel):
    """One machine running `fio --server`."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str  # as the user named it: "a", or the address
    address: str  # a hostname or an IP address, as fio's client connects to it
    port: int = DEFAULT_PORT
    local: bool = False  # this machine (a loopback address or one of its own)

    @property
    def client(self) -> str:
        """The --client value fio takes for this server."""
        kind = "ip6:" if ":" in self.address else ""
        return f"{kind}{self.address},{self.port}"

    @property
    def where(self) -> str:
        """ "a (10.0.0.5:8765)" for messages."""
        address = f"[{self.address}]" if ":" in self.address else self.address
        spot = f"{address}:{self.port}"
        return self.name if self.name == spot else f"{self.name} ({spot})"


def parse_hosts(text: str | None) -> dict[str, Host]:
    """`a=10.0.0.5,b=10.0.0.6:8766` as hosts by name (empty for None or "")."""
    hosts: dict[str, Host] = {}
    for item in (text or "").split(","):
        item = item.strip()
        if not item:
            continue
        name, _, spot = item.rpartition("=")
        address, port = _address_and_port(spot, item)
        if not name.strip() and ":" in address:
            raise SsdcompareError(
                f"--hosts: give {item!r} a name (NAME=[{address}]:{port}): an IPv6 address "
                "cannot name a device (NAME:DEVICE)"
            )
        name = name.strip() or address
        if not _NAME.match(name):
            raise SsdcompareError(
                f"--hosts: {name!r} is not a usable host name (letters, digits, '.', '_', '-')"
            )
        if name in hosts:
            unnamed = name == address
            raise SsdcompareError(f"--hosts names {name!r} twice" + (
                "; give servers on one address names of their own (a=ADDRESS:PORT)"
                if unnamed else ""))  # fmt: skip
        same = [h for h in hosts.values() if (h.address, h.port) == (address, port)]
        if same:
            raise SsdcompareError(f"--hosts: {name!r} and {same[0].name!r} are the same server "
                                  f"({address}:{port})")  # fmt: skip
        hosts[name] = Host(name=name, address=address, port=port, local=is_local(address))
    return hosts


def _address_and_port(spot: str, item: str) -> tuple[str, int]:
    spot = spot.strip()
    bracketed = re.fullmatch(r"\[([0-9A-Fa-f:.]+)\](?::(\d+))?", spot)
    if bracketed:
        address, port_text = bracketed.group(1), bracketed.group(2)
    elif spot.count(":") == 1:
        address, port_text = spot.split(":")
    else:
        address, port_text = spot, None
    if not address:
        raise SsdcompareError(f"--hosts: {item!r} has no address (e.g. a=10.0.0.5:8765)")
    try:
        port = int(port_text) if port_text else DEFAULT_PORT
    except ValueError:
        port = -1
    if not 0 < port < 65536:
        raise SsdcompareError(f"--hosts: {item!r} has no usable port (1-65535)")
    return address, port


@functools.lru_cache(maxsize=64)
def is_local(address: str) -> bool:
    """Whether `address` is this machine: a loopback address, or one of its interfaces'."""
    try:
        found = {info[4][0] for info in socket.getaddrinfo(address, None)}
    except OSError:
        return False  # not resolvable here: whatever it is, it cannot be inspected here
    own = _own_addresses()
    for text in found:
        ip = ipaddress.ip_address(text.split("%")[0])
        mapped = getattr(ip, "ipv4_mapped", None)
        if mapped is not None:  # ::ffff:127.0.0.1
            ip = mapped
        # 0.0.0.0 and :: reach this machine too
        if not (ip.is_loopback or ip.is_unspecified or str(ip) in own):
            return False
    return bool(found)


def _own_addresses() -> set[str]:
    import psutil

    return {
        a.address.split("%")[0]
        for addresses in psutil.net_if_addrs().values()
        for a in addresses
        if a.family in (socket.AF_INET, socket.AF_INET6)
    }


def split_device(spec: str, hosts: dict[str, Host]) -> tuple[Host | None, str]:
    """`a:nvme0n1` as (host a, "nvme0n1") when a is a host; anything else is on this machine."""
    name, sep, device = spec.partition(":")
    if sep and name in hosts:
        if not device.strip():
            raise SsdcompareError(f"{spec!r} names host {name} but no device on it")
        return hosts[name], device.strip()
    if sep and hosts and not name.startswith(("/", ".")) and "/" not in name:
        raise SsdcompareError(
            f"{spec!r}: no host is named {name!r}; --hosts names {', '.join(hosts)}"
        )
    return None, spec
