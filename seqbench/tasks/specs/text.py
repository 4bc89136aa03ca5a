"""Language modelling: Penn Treebank characters and words, and a text file of the user's."""

from __future__ import annotations

from seqbench.tasks.spec import TaskSpec

SPECS = (
    TaskSpec(
        "ptb-char",
        "seqbench.tasks.text:PTBChar",
        "Penn Treebank characters (bits per character)",
        "bpc",
        100,
        baseline_note="unigram of train",
        stream_test=True,
        defaults={"steps": 1000},
        reads=("subset", "test_stream"),
    ),
    TaskSpec(
        "ptb-word",
        "seqbench.tasks.text:PTBWord",
        "Penn Treebank words, 10k vocabulary (perplexity)",
        "ppl",
        35,
        baseline_note="unigram of train",
        stream_test=True,
        defaults={"steps": 1000},
        reads=("subset", "test_stream"),
    ),
    TaskSpec(
        "text",
        "seqbench.tasks.text:TextFile",
        "character-level modelling of a text file given by path (bits per char)",
        "bpc",
        100,
        baseline_note="unigram of train",
        stream_test=True,
        defaults={"steps": 1000},
        reads=("path", "subset", "data_hash", "test_stream"),
    ),
)
