"""When a run has trained out: the one rule that both ends a run trained with `--steps auto`
and flags a cell "under-trained" in an answer (memory/answer.py), so that a run stopped by it
is, by construction, never flagged. Pure Python: the answer reads it without torch."""

from __future__ import annotations

import math

# the last share of a run's evaluations that must not improve on the earlier ones by more than
# IMPROVING of the run's whole improvement, for the run to count as trained out
TAIL, IMPROVING = 0.25, 0.02


def still_improving(curve: list[float], higher_is_better: bool) -> bool:
    """Whether a run's validation curve was still improving at its last evaluation: the best
    of its last TAIL of evaluations (two at least) beats the best before them by more than
    IMPROVING of the run's whole improvement (its first evaluation to its best). Too short a
    curve (under four finite evaluations) is no evidence; a curve that never moved is not
    improving."""
    v = [x for x in curve if math.isfinite(x)]
    if len(v) < 4:
        return False
    if higher_is_better:
        v = [-x for x in v]
    tail = max(2, round(TAIL * len(v)))
    head, end = v[:-tail], v[-tail:]
    whole = v[0] - min(v)
    return whole > 0 and min(head) - min(end) > IMPROVING * whole
