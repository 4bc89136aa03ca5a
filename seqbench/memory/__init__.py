"""`seqbench memory`: how much context a task needs, or that it needs recurrence.

`plan.py` lays out the k-sweep (a geometric grid of contexts for the feedforward families, at
one parameter budget, beside recurrent references, over seeds) and the bisection points;
`runner.py` runs it as a sweep (resumable, crash-safe, reusing done points from the store),
refines the boundary and stores the answer; `answer.py` derives the answer from the runs
(k*(ε) with a bootstrap interval, or a verdict).
"""
