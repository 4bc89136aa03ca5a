"""Language modelling: Penn Treebank characters and words, and a text file of the user's."""

from __future__ import annotations

from seqbench.tasks.spec import PATH, SUBSET, TaskSpec
from seqbench.tasks.specs.files import DATA_HASH


def _language_model(name: str, cls: str, description: str, metric: str, T: int,
                    options: tuple = ()) -> TaskSpec:  # fmt: skip
    """A language model's task: its test split scored whole as a stream (stream_test), the
    unigram of train its trivial baseline, 1000 steps by default."""
    return TaskSpec(
        name,
        f"seqbench.tasks.text:{cls}",
        description,
        metric,
        T,
        baseline_note="unigram of train",
        stream_test=True,
        defaults={"steps": 1000},
        reads=(),
        options=(*options, SUBSET),
    )


SPECS = (
    _language_model("ptb-char", "PTBChar", "Penn Treebank characters (bits per character)",
                    "bpc", 100),
    _language_model("ptb-word", "PTBWord", "Penn Treebank words, 10k vocabulary (perplexity)",
                    "ppl", 35),
    _language_model("text", "TextFile", "character-level modelling of a text file given by "
                    "path (bits per char)", "bpc", 100, options=(PATH, DATA_HASH)),
)  # fmt: skip
