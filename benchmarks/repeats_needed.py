"""How many repeats a side `ssdcompare compare` needs to tell a change of a given size.

    .venv/bin/python benchmarks/repeats_needed.py [RESULTS-FOLDER...]

The gate calls a change a regression when it is beyond the threshold and significant:
Welch's t-test on the logarithms of the repeats, p < 0.05. How small a change that test
catches depends on how much the runs vary (their coefficient of variation, CV) and how
many there are. This prints, for CVs from 1 % to 10 % and 3 to 20 repeats a side, the
smallest change caught 8 times in 10 (80 % power), from the noncentral t distribution
(equal repeats and spread on both sides; on logarithms a CV of c is a standard deviation of
about c).

Given results folders, it also prints the CV their repeats had, job by job (the median over
jobs per device), and for each the repeats that make a 5 % change detectable.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from pathlib import Path

from scipy import optimize, stats

ALPHA = 0.05
POWER = 0.80
CVS = (0.01, 0.02, 0.03, 0.05, 0.10)
REPEATS = (3, 5, 10, 20)


def power(change: float, cv: float, repeats: int, alpha: float = ALPHA) -> float:
    """The chance that a true change of `change` (0.05: 5 %) is significant at `alpha` with
    `repeats` runs a side whose CV is `cv`."""
    sigma = math.log1p(cv)  # the spread of the logarithms
    df = 2 * repeats - 2
    shift = abs(math.log1p(-change)) / (sigma * math.sqrt(2 / repeats))
    critical = stats.t.ppf(1 - alpha / 2, df)
    found = float(stats.nct.sf(critical, df, shift) + stats.nct.cdf(-critical, df, shift))
    # far out, scipy's noncentral t gives NaN where the answer is plainly all or nothing
    return found if math.isfinite(found) else float(shift > critical)


def smallest_change(cv: float, repeats: int) -> float:
    """The smallest change caught with POWER."""
    return float(optimize.brentq(lambda c: power(c, cv, repeats) - POWER, 1e-6, 0.99))


def repeats_for(change: float, cv: float, most: int = 1000) -> int | None:
    """The fewest repeats a side (3 or more) that catch `change` with POWER."""
    for repeats in range(3, most + 1):
        if power(change, cv, repeats) >= POWER:
            return repeats
    return None


def table() -> list[str]:
    header = "CV      " + "".join(f"{n:>4} repeats" for n in REPEATS)
    lines = ["smallest change caught 8 times in 10 (p < 0.05), by CV of the runs and repeats "
             "a side:", header]  # fmt: skip
    for cv in CVS:
        cells = "".join(f"{smallest_change(cv, n) * 100:>10.1f} %" for n in REPEATS)
        needed = repeats_for(0.05, cv)
        lines.append(f"{cv * 100:>4.0f} %  {cells}   (5 %: {needed} repeats)")
    return lines


def measured(folders: list[Path]) -> list[str]:
    """The CVs of IOPS the given folders' repeats had, and the repeats a 5 % change needs."""
    import ssdcompare

    summary = ssdcompare.job_summary(ssdcompare.load(folders))
    lines = []
    for label, rows in summary[summary["repeats"] >= 3].groupby("label", sort=False):
        cvs = [v for v in rows["iops_cv_pct"] if v == v]
        if not cvs:
            continue
        cv = statistics.median(cvs) / 100
        needed = repeats_for(0.05, cv)
        lines.append(f"{label}: median CV of IOPS over {len(cvs)} jobs {cv * 100:.1f} % -> "
                     f"a 5 % change needs {needed or 'over 1000'} repeats a side")  # fmt: skip
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="*", type=Path)
    args = parser.parse_args()
    for line in table():
        print(line)
    if args.folders:
        print()
        for line in measured(args.folders):
            print(line)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
