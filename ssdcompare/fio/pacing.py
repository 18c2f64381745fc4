"""How fio paces a job with `rate_process=poisson`: the IOPS it really offers for a given
`rate_iops`, and the `rate_iops` that offers a load closest to the one wanted.

fio draws each gap between two I/Os of a process (per direction) as
`floor(g * -ln(U))` microseconds, where `g = 1,000,000 // rate_iops` is an integer: the mean
gap is a whole number of microseconds before the draw, and the draw is cut to whole
microseconds after it. The mean gap is therefore 1 / (e^(1/g) - 1) µs (about g - 0.5), not
1,000,000 / rate_iops: at 60,000 IOPS per process fio offers about 64,500. Pacing is coarse
above some 50,000 IOPS per process (neighbouring g differ by 2 % or more) and impossible
from 1,000,000 (g = 0: fio does not pace at all).
"""

from __future__ import annotations

import math

US_PER_S = 1_000_000


def offered_iops(rate_iops: int) -> float | None:
    """The mean IOPS fio offers per process and direction at `rate_iops` with Poisson
    arrivals; None when it does not pace at that rate (or the rate is no rate)."""
    if rate_iops <= 0:
        return None
    gap = US_PER_S // rate_iops
    if gap == 0:
        return None
    return US_PER_S * math.expm1(1 / gap)


def rate_for(wanted_iops: float) -> int:
    """The `rate_iops` whose offered load (offered_iops) is closest to `wanted_iops`, per
    process and direction; at least 1, at most 500,000 (a whole-µs gap of 2)."""
    wanted = min(max(wanted_iops, 1.0), US_PER_S / 2)
    gap = 1 / math.log1p(wanted / US_PER_S)  # the whole-µs gap fio would need, unrounded
    candidates = {max(int(wanted), 1), US_PER_S // 2}
    candidates |= {US_PER_S // g for g in (math.floor(gap), math.ceil(gap)) if g >= 2}
    return min(sorted(candidates), key=lambda r: abs((offered_iops(r) or 0.0) - wanted))
