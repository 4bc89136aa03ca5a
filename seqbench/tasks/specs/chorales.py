"""Bach chorales (music21): next-frame prediction of 88 pitches."""

from __future__ import annotations

from seqbench.tasks.spec import SUBSET, TaskSpec

# T = the training crop length; evaluation uses whole chorales
SPEC = TaskSpec(
    "chorales",
    "seqbench.tasks.music:Chorales",
    "Bach chorales (music21), next-frame 88-pitch prediction (frame NLL)",
    "nll",
    64,
    baseline_note="per-pitch frequencies of train (no context)",
    # Adam 1e-2 (1e-3, the global default, left an RNN-64 and an LSTM-64 at the
    # context-free baseline after 1000 steps, 13.0 nats; 3e-3 reached 11.7-12.1, 1e-2
    # 10.3-10.5)
    defaults={"steps": 1000, "batch_size": 16, "lr": 1e-2},
    options=(SUBSET,),
    reads=(),
)
