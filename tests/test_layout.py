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
    ("targets", ["hosts", "targetfile", "devices", "guard", "identity", "locks", "metadata"]),
    ("fio", ["fio", "jobcheck", "jobfile", "fioresult", "plausibility", "fiologs", "fioclient"]),
    ("plan", ["plan"]),
    ("store", ["store", "outputs"]),
    ("running", ["sampler", "watchdog", "runner", "precondition", "ramdisk", "ceiling"]),
    ("sweep", ["sweep"]),
    ("frame", ["framecache", "persecond", "perburst", "frame", "answer"]),
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
                    else (node.lineno, "ssdcompare")
                    for alias in node.names
                ]
            else:
                found.append((node.lineno, node.module))
    return [(line, name) for line, name in found if name.split(".")[0] == "ssdcompare"]


def modules() -> list[str]:
    return sorted(p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__")


def test_every_module_has_a_stage() -> None:
    missing = [m for m in modules() if m not in STAGE_OF]
    gone = [m for m in STAGE_OF if m not in modules()]
    assert not missing, f"place these modules in STAGES (and docs/architecture.md): {missing}"
    assert not gone, f"STAGES names modules that no longer exist: {gone}"


def test_imports_point_to_the_same_or_an_earlier_stage() -> None:
    wrong = []
    for module in modules():
        for line, name in imports_of(PACKAGE / f"{module}.py"):
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
            name.split(".")[1]
            for _, name in imports_of(PACKAGE / f"{module}.py")
            if name != "ssdcompare"
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
    unnamed = [m for m in modules() if f"`{m}.py`" not in text]
    assert not unnamed, f"docs/architecture.md does not describe: {unnamed}"
