"""The package's layout follows the data flow: a stage is a sub-package (or, for the
foundations, a few top-level modules), and a module imports only from its own stage or
earlier ones, never from a later stage and never from the package itself (its `__init__`
is a facade for users). The stages and their order are read from the table in
docs/architecture.md, so the docs and the code cannot drift apart."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

PACKAGE = Path(__file__).parent.parent / "ssdcompare"
ARCHITECTURE = PACKAGE.parent / "docs" / "architecture.md"


def stage_table() -> list[tuple[str, list[str]]]:
    """(stage, places) in order from the table under "## Stages": a place is a top-level
    module (`units.py`) or a sub-package (`run/`), as the table writes them."""
    text = ARCHITECTURE.read_text(encoding="utf-8")
    section = text.split("\n## Stages\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ")]
    stages = []
    for row in rows[1:]:  # past the header (the rule under it starts "|-")
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        stages.append((cells[0], re.findall(r"`([\w]+(?:\.py|/))`", cells[1])))
    return stages


STAGES = stage_table()
STAGE_OF_PLACE = {place: index for index, (_, places) in enumerate(STAGES) for place in places}


def source_files() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def dotted(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def place_of(module: str) -> str:
    """The place (top-level module or sub-package) a dotted module name belongs to."""
    parts = module.split(".")
    if (PACKAGE / parts[1]).is_dir():
        return f"{parts[1]}/"
    return f"{parts[1]}.py"


def imports_of(path: Path) -> list[tuple[int, str]]:
    """(line, module) for every import of a package module, at any depth in the file
    (imports inside functions count: they are still arrows). `from a.b import c` is an
    arrow to a.b.c when c is a module, else to a.b."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module:
            base = PACKAGE.parent.joinpath(*node.module.split("."))
            for alias in node.names:
                is_module = (base / f"{alias.name}.py").exists() or (
                    base / alias.name / "__init__.py"
                ).exists()
                found.append((node.lineno, f"{node.module}.{alias.name}" if is_module
                              else node.module))  # fmt: skip
    return [(line, name) for line, name in found if name.split(".")[0] == "ssdcompare"]


def test_the_stage_table_is_read() -> None:
    names = [stage for stage, _ in STAGES]
    assert names[0] == "foundations" and names[-1] == "cli", names
    assert all(places for _, places in STAGES), STAGES


def test_every_module_has_a_stage() -> None:
    places = {place_of(dotted(path)) for path in source_files() if path.parent != PACKAGE
              or path.stem != "__init__"}  # fmt: skip
    missing = sorted(places - set(STAGE_OF_PLACE))
    gone = sorted(set(STAGE_OF_PLACE) - places)
    assert not missing, f"place these in the stage table of docs/architecture.md: {missing}"
    assert not gone, f"the stage table names what no longer exists: {gone}"


def test_imports_point_to_the_same_or_an_earlier_stage() -> None:
    wrong = []
    for path in source_files():
        module = dotted(path)
        if module == "ssdcompare":
            continue
        stage = STAGE_OF_PLACE[place_of(module)]
        for line, name in imports_of(path):
            where = f"{path.relative_to(PACKAGE)}:{line}"
            if name == "ssdcompare":
                wrong.append(f"{where} imports the package itself")
            elif STAGE_OF_PLACE[place_of(name)] > stage:
                later = STAGES[STAGE_OF_PLACE[place_of(name)]][0]
                wrong.append(f"{where} imports {name} (a later stage: {later})")
    assert not wrong, "\n".join(wrong)


def test_no_import_cycles() -> None:
    arrows = {dotted(path): {name for _, name in imports_of(path)} for path in source_files()}
    cycles = []

    def visit(module: str, path: list[str]) -> None:
        for target in sorted(arrows.get(module, ())):
            if target in path:
                cycles.append(" -> ".join([*path[path.index(target) :], target]))
            elif target != module:
                visit(target, [*path, target])

    for module in arrows:
        if module != "ssdcompare":
            visit(module, [module])
    assert not cycles, "\n".join(sorted(set(cycles)))


def test_sub_package_inits_import_nothing_but_their_own() -> None:
    """A sub-package's `__init__` is loaded before any of its modules: it must not pull in
    other stages (the command line's start-up and the reading of results depend on it)."""
    heavy = []
    for init in PACKAGE.glob("*/__init__.py"):
        own = dotted(init)
        heavy += [f"{init.relative_to(PACKAGE)} imports {name}" for _, name in imports_of(init)
                  if not name.startswith(own)]  # fmt: skip
    assert not heavy, "\n".join(heavy)


def test_the_facade_imports_nothing_heavy() -> None:
    """`import ssdcompare` loads only the version; the rest is reached lazily by name."""
    names = {name for _, name in imports_of(PACKAGE / "__init__.py")}
    assert names <= {"ssdcompare.version"}


def test_the_code_map_names_every_module() -> None:
    text = ARCHITECTURE.read_text(encoding="utf-8")
    unnamed = [str(path.relative_to(PACKAGE)) for path in source_files()
               if path.name != "__init__.py" or path.parent.parent != PACKAGE]  # fmt: skip

    def named(name: str) -> bool:  # the file itself, or a folder below a stage holding it
        folders = [f"`{parent.as_posix()}/`" for parent in Path(name).parents][:-2]
        return f"`{name}`" in text or any(folder in text for folder in folders)

    unnamed = [name for name in unnamed if not named(name) and name != "__init__.py"]
    assert not unnamed, f"docs/architecture.md does not describe: {unnamed}"


def test_reading_results_never_loads_the_code_that_runs_fio() -> None:
    """The frame, the report and the charts read results: loading them loads no module of the
    stage that plans and runs sweeps, so reading results cannot depend on running them."""
    code = ("import sys, ssdcompare.analysis.frame, ssdcompare.analysis.persecond, "
            "ssdcompare.analysis.perburst, ssdcompare.analysis.answer, "
            "ssdcompare.report.build, ssdcompare.plot; "
            "print(' '.join(sorted(sys.modules)))")  # fmt: skip
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True, cwd=PACKAGE.parent)  # fmt: skip
    loaded = set(done.stdout.split())
    assert "ssdcompare.analysis.frame" in loaded and "ssdcompare.report.build" in loaded
    assert not [name for name in loaded if name.startswith("ssdcompare.run")]
    assert not [name for name in loaded if name.startswith("ssdcompare.cli")]


MAX_MODULE_LINES = 800
MAX_FUNCTION_LINES = 50  # from its `def` to its last line, decorators not counted


def test_no_module_is_over_800_lines() -> None:
    """A module longer than this holds more than one thing: split it by what each part owns."""
    counts = {path: len(path.read_text(encoding="utf-8").splitlines()) for path in source_files()}
    long = [f"{path.relative_to(PACKAGE)}: {count} lines" for path, count in counts.items()
            if count > MAX_MODULE_LINES]  # fmt: skip
    assert not long, "\n".join(long)


def test_no_function_is_over_50_lines() -> None:
    """A function longer than this does several steps: give each its name."""
    long = []
    for path in source_files():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                count = (node.end_lineno or node.lineno) - node.lineno + 1
                if count > MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {node.name}: {count}")
    assert not long, "\n".join(long)
