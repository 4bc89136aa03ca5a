"""IndRNN (Li et al. 2018): models/indrnn.py, its recurrence in ops/indrnn."""

from __future__ import annotations

from seqbench.models.spec import BACKEND, DROPOUT, ModelSpec, builder
from seqbench.options import MODEL, Option

# |u| ≤ magnitude^(1/T) (Li et al.'s M, 2 by default), and the residual, batch-normed stack
MAGNITUDE = Option("magnitude", float, MODEL, "IndRNN's recurrent bound M: |u| ≤ M^(1/T) (2)",
                   positive=True, nullable=False)  # fmt: skip
DEEP = Option("deep", bool, MODEL, "IndRNN's deep variant: batch norm after every layer (false)",
              nullable=False)  # fmt: skip

SPEC = ModelSpec(
    "indrnn",
    "IndRNN (Li et al. 2018): h = relu(Wx + u ⊙ h), |u| ≤ M^(1/T)",
    True,
    builder("seqbench.models.indrnn", "IndRNN"),
    {"layers": 2},
    stable=True,
    indrnn_kernel=True,
    activation_units=4,
    no_decay=("u", "bias"),  # the authors' scripts: no decay on weight_hh or any bias
    task_defaults={
        # adding, as the authors' adding script (IndRNN_Theano_Lasagne adding/adding.py)
        # trains it: 2×128, Adam 2e-4, batch 32, an element-wise clip at 10 and no norm
        # clip, lr ÷10 after every 20,100 steps (its `count > 200` evaluations of 100).
        # Its clip is on each step's pre-activation gradient, ours on each parameter's;
        # neither fires on this task. Its markers, one in each half, are a task field
        # (`marker=halves`), not a model's default: the task stays the task whatever model
        # runs it. seqbench's earlier variant (a norm clip at 10, batch 50 as in the uRNN
        # setup) is `--batch-size 50 --set clip=10 --set clip_value=none`.
        "adding": {
            "layers": 2,
            "hidden": 128,
            "lr": 2e-4,
            "clip_value": 10.0,
            "lr_decay_every": 20100,
        },
        # pixel sequences: the batch-normalised network of the authors' sequential-MNIST
        # script (M = 5, Adam 2e-4, dropout 0.1, weight decay 1e-4 off u and the biases,
        # gradients clamped to ±10), 2 layers rather than its 6. Without batch norm the
        # N(0, 0.001) input weights leave the features too small to learn from (7.5% test
        # accuracy on digits).
        **{
            t: {
                "deep": True,
                "lr": 2e-4,
                "magnitude": 5.0,
                "dropout": 0.1,
                "weight_decay": 1e-4,
                "clip_value": 10.0,
            }
            for t in ("digits", "pdigits", "fashion", "pfashion")
        },
    },
    options=(DROPOUT, MAGNITUDE, DEEP, BACKEND),
    reads=(),
)
