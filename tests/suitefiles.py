"""Suite files written by tests: a name, optional defaults, and workloads as YAML mappings."""

from __future__ import annotations

from pathlib import Path


def suite_file(folder: Path, name: str, *workloads: str, defaults: str | None = None) -> Path:
    """Write `folder/<name>.yaml`; each workload is a YAML flow mapping such as
    "{rw: randread, bs: 4k}", and `defaults` one too."""
    lines = [f"name: {name}", f"description: {name}, a suite of the tests"]
    if defaults:
        lines.append(f"defaults: {defaults}")
    lines += ["workloads:", *(f"  - {workload}" for workload in workloads)]
    path = folder / f"{name}.yaml"
    path.write_text("\n".join(lines) + "\n")
    return path
