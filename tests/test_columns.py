"""The results frame's columns come from one registry (ssdcompare.analysis.columns), and the docs'
tables of them are made from it: the three agree."""

from __future__ import annotations

from pathlib import Path

import ssdcompare
from ssdcompare.analysis.columns import FRAME_COLUMNS, SECTIONS, TYPES, markdown_table, with_tables

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs" / "results-format.md"
EXAMPLE = REPO / "examples" / "results" / "ramdisk-vs-loop"
# text is pandas' text type, or object where no row holds text
DTYPES = {"float": {"float64"}, "Int64": {"Int64"}, "boolean": {"boolean"},
          "str": {"str", "string", "object"}, "tuple of float": {"object"}}  # fmt: skip


def test_the_docs_tables_are_the_registrys() -> None:
    text = DOCS.read_text(encoding="utf-8")
    assert with_tables(text) == text, (
        "run: python -m ssdcompare.analysis.columns docs/results-format.md"
    )
    for section in SECTIONS:  # every part has its table, under its heading
        assert f"### {section}\n" in text and markdown_table(section) in text


def test_every_column_is_described_once_with_a_known_type_and_part() -> None:
    names = [column.name for column in FRAME_COLUMNS]
    assert len(names) == len(set(names))
    for column in FRAME_COLUMNS:
        assert column.type in TYPES and column.section in SECTIONS and column.source.strip()


def test_a_loaded_frame_has_the_registrys_columns_in_order_and_of_their_types() -> None:
    frame = ssdcompare.load(EXAMPLE, cache=False)
    assert list(frame.columns) == [column.name for column in FRAME_COLUMNS]
    for column in FRAME_COLUMNS:
        assert str(frame[column.name].dtype) in DTYPES[column.type], column.name
