"""Adding config fields (a data file's kind and content hash, a plugin's provenance) changed no
existing run's hash: a resumed sweep finds its old points done. The values were computed by
the seqbench before those fields existed (commit 935ab00)."""

import pytest

from seqbench.configure import config_hash, resolve


@pytest.mark.parametrize(
    ("model", "task", "over", "digest"),
    [
        ("rnn", "adding", {}, "8afc1828030cb0023df098d7cd5d26c370b64b73ae8f2ed437364370fcbfa6d0"),
        (
            # copy's symbols as tokens, clipped at 1: the defaults before symbols=float and no
            # clip became them (the reference code's), given explicitly
            "tcn",
            "copy",
            {"k": 8, "symbols": "tokens", "clip": 1.0},
            "e92373fc3fc9b9ef91023e7eafff50d41891f2ecba60baddb98a1b09680bf6eb",
        ),
        # the teacher before teacher_kind (commit 64d7cbd), and an explicit tanh teacher
        (
            "window",
            "teacher",
            {"k": 4, "teacher_lam": 0.5},
            "04e98d8bc32b4924bf35d04368423c921ed8217050efcbe1944667f1bd8ef0e8",
        ),
        (
            "rnn",
            "teacher",
            {"teacher_kind": "tanh"},
            "22b98d24f30b0ee3e65fa7edc7e58c71f159968d0a6f3700d7f3d41720832f54",
        ),
        (
            "indrnn",
            "digits",
            {"seed": 3},
            "8ca96cc0ff1302c60f981fe0b3f5c7bc7a99cb99c2b2fdbd57e9f4d821289d5e",
        ),
    ],
)
def test_a_built_in_config_keeps_the_hash_it_had(model, task, over, digest):
    assert config_hash(resolve(model, task, over)) == digest
