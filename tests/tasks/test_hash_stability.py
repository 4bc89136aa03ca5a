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
        # the memory-function task's fields became its own options (TaskSpec.options): its
        # configs hash as they did when the fields were RunConfig's (commit 1b7cd91)
        (
            "tcn",
            "memory-function",
            {"kernel": "power", "alpha": 0.8},
            "7684194048ec6f6a4761004cb09100265cd28d1e583115980b07171fc9eea64a",
        ),
        (
            "tcn",
            "memory-function",
            {"noise": 0.1, "kernel": "osc", "omega": 0.3},
            "8073da0d0b19abc0d11a62b961e258c774eb8a2e7e06210b82285465ad0bf38d",
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


def test_a_run_stored_before_a_field_became_an_option_is_the_same_experiment():
    """Runs stored while kernel … noise were RunConfig's fields hold them as null; a run of
    today's does not hold them at all. Neither the hash nor "do these runs differ" tells the
    two apart."""
    from seqbench.config import digest, experiment_fields

    now = resolve("rnn", "teacher", {}).to_dict()
    before = now | dict.fromkeys(("kernel", "decay", "alpha", "delay", "omega", "noise"))
    assert "kernel" not in now
    assert experiment_fields(before) == experiment_fields(now)
    assert digest(experiment_fields(before)) == config_hash(resolve("rnn", "teacher", {}))
