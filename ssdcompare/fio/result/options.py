"""The options in fio's output: a job's own, and the global options, per server in
client/server output.

"global options" is one object with one server (and, before fio added per-server lists, with
several: every server's global options then land in that one object, repeated keys and all);
with several servers newer fio (3.43 does) writes a list, one object per server holding its
"hostname" and "port" and then its options. Each job gets its own server's global options.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from ssdcompare.fio.result.document import _Repeated
from ssdcompare.fio.result.values import _Issues, _kind, _listed, _Reader


def _options(raw: Any, reader: _Reader, path: str) -> dict[str, str]:
    """fio's options as strings, from an object in which a key may appear more than once.

    Repeats with one value are plain repetition (a client's --status-interval reports). Of
    different values the last is used, as an assignment later in a jobfile wins in fio, except
    for filename: fio opens every file given, so they are joined with ":", fio's own separator.
    """
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        reader.issues.other.append(
            f"{reader.label}: {path} is {_kind(raw)}, where fio writes an object: left out"
        )
        return {}
    pairs = raw.pairs if isinstance(raw, _Repeated) else list(raw.items())
    options: dict[str, str] = {}
    clashes: dict[str, list[str]] = {}
    for key, value in pairs:
        text = _option_text(value)
        if text is None:
            reader.issues.other.append(
                f"{reader.label}: {path}.{key} is {_kind(value)}, not an option value: left out"
            )
            continue
        if key in options and options[key] != text:
            clashes.setdefault(key, [options[key]]).append(text)
        options[key] = text
    for key, values in clashes.items():
        if key == "filename":
            names = dict.fromkeys(value.replace(":", "\\:") for value in values)
            options[key] = ":".join(names)
            outcome = f"fio uses every one: read as {options[key]}"
        else:
            outcome = "the last is used"
        reader.issues.other.append(
            f"{reader.label}: {path} sets {key} more than once ({', '.join(values)}): {outcome}"
        )
    return options


def _option_text(value: Any) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return str(value)
    return None


def _global_options(
    raw: Any, servers: int, reader: _Reader, issues: _Issues
) -> tuple[dict[str, str], dict[tuple[str | None, int | None], dict[str, str]] | None]:
    """The file's global options, and per server (hostname, port) when fio wrote a list.

    `servers` is how many servers the client/server entries come from (0 for plain output).
    """
    if isinstance(raw, list):
        per_host: dict[tuple[str | None, int | None], dict[str, str]] = {}
        for index, item in enumerate(raw):
            if not isinstance(item, dict):
                issues.other.append(
                    f"global options[{index}] is {_kind(item)}, where fio writes one server's"
                    " options: left out"
                )
                continue
            host, port, rest = _server_identity(item)
            if host is None and port is None:
                issues.other.append(
                    f"global options[{index}] does not say which server it belongs to (no"
                    " 'hostname' and 'port'): not used"
                )
                continue
            per_host[(host, port)] = _options(_Repeated(rest), reader, f"global options[{index}]")
        return {}, per_host
    if servers < 2 or not isinstance(raw, dict):
        return _options(raw, reader, "global options"), None
    return _mixed_global_options(raw, servers, issues), None


def _mixed_global_options(raw: dict[str, Any], servers: int, issues: _Issues) -> dict[str, str]:
    """What can be known from one "global options" object that several servers wrote into.

    fio before per-server lists adds every server's global options to one object, one server
    (and, with --status-interval, one report) after the other, without saying whose they are.
    A new block starts where a key comes again; an option is known only when every block has
    it with one value. With fewer blocks than servers, some server's options cannot be told
    apart (no key in common, or none sent), and nothing is known.
    """
    pairs = raw.pairs if isinstance(raw, _Repeated) else list(raw.items())
    blocks: list[dict[str, str]] = [{}]
    for key, value in pairs:
        text = _option_text(value)
        if text is None:
            issues.other.append(
                f"global options.{key} is {_kind(value)}, not an option value: left out"
            )
            continue
        if key in blocks[-1]:
            blocks.append({})
        blocks[-1][key] = text
    keys = list(dict.fromkeys(key for block in blocks for key in block))
    known: dict[str, str] = {}
    unknown = []
    for key in keys:
        values = sorted({block[key] for block in blocks if key in block})
        if len(blocks) >= servers and len(values) == 1 and all(key in b for b in blocks):
            known[key] = values[0]
        else:
            unknown.append(f"{key} ({', '.join(values)})")
    if unknown:
        issues.other.append(
            f"global options: {_listed(unknown)} differ between the {servers} servers or are"
            " not set on all of them, and fio wrote every server's global options into one"
            " object without saying whose are whose: left unknown"
        )
    return known


def _server_identity(item: dict[str, Any]) -> tuple[str | None, int | None, list[tuple[str, Any]]]:
    """A per-server "global options" object split into hostname, port and the options.

    fio writes the server's hostname and port first and then its options; an option may itself
    be called hostname or port (the net engine's), so the first of each names the server.
    """
    pairs = item.pairs if isinstance(item, _Repeated) else list(item.items())
    host: str | None = None
    port: int | None = None
    seen_host = seen_port = False
    rest = []
    for key, value in pairs:
        if key == "hostname" and not seen_host:
            seen_host = True
            host = value if isinstance(value, str) else None
        elif key == "port" and not seen_port:
            seen_port = True
            port = _port(value)
        else:
            rest.append((key, value))
    return host, port, rest


def _port(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if 0 <= value < 2**32 else None
    if isinstance(value, float) and math.isfinite(value) and value.is_integer():
        return _port(int(value))
    if isinstance(value, str) and value.strip().isdigit():
        return _port(int(value.strip()))
    return None


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _shared(option_sets: Sequence[dict[str, str]]) -> dict[str, str]:
    """The options with one value in every set."""
    if not option_sets:
        return {}
    first, *others = option_sets
    return {k: v for k, v in first.items() if all(o.get(k) == v for o in others)}
