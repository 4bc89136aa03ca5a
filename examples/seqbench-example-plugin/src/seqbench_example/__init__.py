"""The entry points of the example plugin: seqbench imports this module only when a user asks
for `diag` or `sunspots` (or lists the models and tasks), never for --help or a report."""

from seqbench.models import ModelSpec
from seqbench.tasks import TaskSpec

__version__ = "0.1.0"


def _build_diag(in_dim, args):
    from seqbench_example.diag import DiagonalRNN  # torch is imported here, when a model is built

    return DiagonalRNN(in_dim, args)


diag = ModelSpec(
    name="diag",
    description="Diagonal linear recurrence h = a ⊙ h + Bx with an MLP readout (example plugin)",
    recurrent=True,
    build=_build_diag,
    defaults={"hidden": 32},
    stable=True,  # it has project_: --stable applies
    activation_units=4,
)

sunspots = TaskSpec(
    name="sunspots",
    target="seqbench_example.sunspots:Sunspots",
    description="yearly sunspot numbers 1700-2008: predict next year's from the last T (MSE)",
    metric="mse",
    default_seq_len=24,
    baseline_note="predict the mean of the training years",
    min_seq_len=2,
    defaults={"steps": 500},  # what `seqbench train` runs without --steps
)
