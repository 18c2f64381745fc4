"""The package's layout follows the data flow: each module imports only from its own stage or
earlier ones, never from a later stage and never from the package itself (its `__init__` is
a facade for users). docs/architecture.md describes the same stages."""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).parent.parent / "ssdcompare"

# Earlier stages first. A suite file becomes models, models become jobfiles for targets, fio
# runs them into a results folder, the folder becomes a frame, the frame a report; the
# command line sits on top of everything.
STAGES = [
    (
        "foundations",
        ["version", "errors", "units", "regularfile", "userkey", "pathwalk", "resources"],
    ),
    (
        "models",
        ["fiooptions", "workload", "matrix", "suites", "cpu", "steady", "stats", "verdict"],
    ),
    (
        "targets",
        [
            "hosts",
            "targetfile",
            "devices",
            "backupheaders",
            "guard",
            "identity",
            "locks",
            "metadata",
            "probes",
        ],
    ),
    (
        "fio",
        [
            "fio",
            "jobcheck",
            "jobfile",
            "fiomodels",
            "fiomerge",
            "fioquick",
            "fioresult",
            "plausibility",
            "fiologs",
            "fioclient",
        ],
    ),
    ("store", ["store", "outputs"]),
    ("running", ["plan", "sampler", "watchdog", "runner", "precondition", "ramdisk", "ceiling"]),
    ("sweep", ["sweep"]),
    ("frame", ["columns", "framecache", "persecond", "perburst", "frame", "answer"]),
    (
        "presenting",
        [
            "chartspec",
            "charts",
            "reporttable",
            "chartkinds",
            "reportcharts",
            "reportjobfiles",
            "reportadvice",
            "report",
            "chartfigure",
            "plot",
        ],
    ),
    ("interface", ["api", "terminal", "cli", "entry", "__main__"]),
]
STAGE_OF = {module: index for index, (_, modules) in enumerate(STAGES) for module in modules}


def imports_of(path: Path) -> list[tuple[int, str]]:
    """(line, module) for every import of a package module, at any depth in the file
    (imports inside functions count: they are still arrows)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            if node.module == "ssdcompare":  # from ssdcompare import fio: a module, or not
                found += [
                    (node.lineno, f"ssdcompare.{alias.name}")
                    if (PACKAGE / f"{alias.name}.py").exists()
                    or (PACKAGE / alias.name / "__init__.py").exists()
                    else (node.lineno, "ssdcompare")
                    for alias in node.names
                ]
            else:
                found.append((node.lineno, node.module))
    return [(line, name) for line, name in found if name.split(".")[0] == "ssdcompare"]


def modules() -> list[str]:
    """The package's modules and sub-packages (a sub-package is one unit, in one stage)."""
    flat = [p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"]
    return sorted(flat + [p.parent.name for p in PACKAGE.glob("*/__init__.py")])


def unit_imports(module: str) -> list[tuple[int, str]]:
    """The imports of a module, or of every file of a sub-package (but those of its own)."""
    if (PACKAGE / f"{module}.py").exists():
        return imports_of(PACKAGE / f"{module}.py")
    found = [found for path in sorted((PACKAGE / module).rglob("*.py"))
             for found in imports_of(path)]  # fmt: skip
    return [(line, name) for line, name in found if not name.startswith(f"ssdcompare.{module}")]


def test_every_module_has_a_stage() -> None:
    missing = [m for m in modules() if m not in STAGE_OF]
    gone = [m for m in STAGE_OF if m not in modules()]
    assert not missing, f"place these modules in STAGES (and docs/architecture.md): {missing}"
    assert not gone, f"STAGES names modules that no longer exist: {gone}"


def test_imports_point_to_the_same_or_an_earlier_stage() -> None:
    wrong = []
    for module in modules():
        for line, name in unit_imports(module):
            if name == "ssdcompare":
                wrong.append(f"{module}.py:{line} imports the package itself")
                continue
            target = name.split(".")[1]
            if STAGE_OF[target] > STAGE_OF[module]:
                later = STAGES[STAGE_OF[target]][0]
                wrong.append(f"{module}.py:{line} imports {target} (a later stage: {later})")
    assert not wrong, "\n".join(wrong)


def test_no_import_cycles() -> None:
    arrows = {
        module: {
            name.split(".")[1] for _, name in unit_imports(module) if name != "ssdcompare"
        }  # fmt: skip
        for module in modules()
    }
    cycles = []

    def visit(module: str, path: list[str]) -> None:
        for target in sorted(arrows.get(module, ())):
            if target in path:
                cycles.append(" -> ".join([*path[path.index(target) :], target]))
            elif target != module:
                visit(target, [*path, target])

    for module in modules():
        visit(module, [module])
    assert not cycles, "\n".join(sorted(set(cycles)))


def test_the_facade_imports_nothing_heavy() -> None:
    """`import ssdcompare` loads only the version; the rest is reached lazily by name."""
    names = {name for _, name in imports_of(PACKAGE / "__init__.py")}
    assert names <= {"ssdcompare.version"}


def test_the_code_map_names_every_module() -> None:
    text = (PACKAGE.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    unnamed = [m for m in modules() if f"`{m}.py`" not in text and f"`{m}/`" not in text]
    assert not unnamed, f"docs/architecture.md does not describe: {unnamed}"


def test_reading_results_never_loads_the_code_that_runs_fio() -> None:
    """The frame, the report and the charts read results: loading them loads no module of the
    stages that plan and run sweeps, so reading results cannot depend on running them."""
    import subprocess
    import sys

    running = [m for stage, names in STAGES if stage in ("running", "sweep") for m in names]
    code = ("import sys, ssdcompare.frame, ssdcompare.report, ssdcompare.persecond, "
            "ssdcompare.perburst; print(' '.join(sorted(sys.modules)))")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, cwd=PACKAGE.parent)  # fmt: skip
    loaded = set(done.stdout.split())
    assert "ssdcompare.frame" in loaded
    assert not [m for m in running if f"ssdcompare.{m}" in loaded]
