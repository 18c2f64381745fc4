"""Sizes as storage engineers type them (fio's 1024-based suffixes) and their compact spellings."""

from __future__ import annotations

import pytest

from ssdcompare.units import format_bytes, format_duration, parse_size, size_token


@pytest.mark.parametrize(
    ("typed", "size_bytes"),
    [
        ("4k", 4096),
        ("4K", 4096),
        ("4KiB", 4096),
        ("4kb", 4096),
        ("1M", 1024**2),
        ("4m", 4 * 1024**2),
        ("1g", 1024**3),
        ("2T", 2 * 1024**4),
        (4096, 4096),
        ("4096", 4096),
        ("512b", 512),
        (" 128K ", 128 * 1024),
    ],
)
def test_parse_size_reads_what_people_type(typed: int | str, size_bytes: int) -> None:
    assert parse_size(typed) == size_bytes


@pytest.mark.parametrize("typed", ["4q", 0, -1, "", True, False, "0k", "-4k", "4.5k", "k", 4.0])
def test_parse_size_rejects_what_is_not_a_size(typed: object) -> None:
    with pytest.raises(ValueError):
        parse_size(typed)  # type: ignore[arg-type]


def test_parse_size_error_shows_the_accepted_forms() -> None:
    with pytest.raises(ValueError, match=r"'4q' is not a size.*4k"):
        parse_size("4q")


@pytest.mark.parametrize(
    ("size_bytes", "token"),
    [(4096, "4k"), (1048576, "1m"), (1536, "1536"), (512, "512"), (3 * 1024**3, "3g"),
     (1024**4, "1t"), (1536 * 1024, "1536k")],
)  # fmt: skip
def test_size_token(size_bytes: int, token: str) -> None:
    assert size_token(size_bytes) == token


@pytest.mark.parametrize("size_bytes", [512, 1536, 4096, 8192, 65536, 1024**2, 4 * 1024**2, 10**9])
def test_size_token_round_trips_through_parse_size(size_bytes: int) -> None:
    assert parse_size(size_token(size_bytes)) == size_bytes


@pytest.mark.parametrize(
    ("size_bytes", "shown"),
    [(None, "-"), (512, "512 B"), (4096, "4 KiB"), (1536, "1.5 KiB"), (1024**3, "1 GiB"),
     (5 * 1024**5, "5120 TiB")],
)  # fmt: skip
def test_format_bytes(size_bytes: int | None, shown: str) -> None:
    assert format_bytes(size_bytes) == shown


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [
        (0, "0 s"),
        (0.25, "0.25 s"),
        (0.12, "0.12 s"),
        (59, "59 s"),
        (59.6, "1 min 00 s"),
        (125, "2 min 05 s"),
        (7260, "2 h 01 min"),
    ],
)
def test_format_duration(seconds: float, shown: str) -> None:
    assert format_duration(seconds) == shown
