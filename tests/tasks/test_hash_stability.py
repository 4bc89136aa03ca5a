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


# RunConfig's fields that some families or tasks read and others never do became the options of
# those that read them (#63 §1): each config hashes as it did when they were RunConfig's (the
# digests written by the seqbench of commit 3736db2, where they were), a table file's too
@pytest.mark.parametrize(
    ("model", "task", "over", "digest"),
    [
        ("lru", "adding", {"d_state": 8},
         "c4d9714e8decc0138a868cb492eb894f85741b4a7e6fb4630cf8ac273f1fa622"),
        ("window", "teacher", {"k": 4, "base": "lru", "d_state": 8, "teacher_kind": "linear"},
         "d2e12de5dec616f4495cddc18e85feaf3ff0fffa6eefdd2ceec8db03d94f2036"),
        ("lstm", "adding", {"stable": True, "forget_cap": 0.3},
         "cd7051224b1281061287b7ca98a435916a3be4f4a86cb5190db5690bfcffd689"),
        ("gru", "mqar", {"vocab_size": 300, "num_pairs": 3},
         "05cc18db6d72a15c8b30c8ed095273363ec997ae61978eb3831f2fe396caa24d"),
        ("tcn", "copy", {"k": 8, "symbols": "float"},
         "4f062e7bc14c11333da82d4c8075276c18a3fd97d4298df77dbd4396b65aea38"),
        ("lstm", "ptb-char", {"test_stream": False},
         "0d952a983cecc9d6ea6c49b0d5b772002f69cd722aece717e13ccd7f5bb06318"),
        ("tcn", "file", {"y_cols": "a", "x_cols": "b", "time_col": "t", "horizon": 2},
         "341beadbb2c3100d7e9bf34326345a7203d15fc730fe0d769989e15ecd2c6151"),
    ],
)  # fmt: skip
def test_a_field_that_became_its_owners_option_keeps_the_hash(model, task, over, digest, tmp_path):
    import math

    if task == "file":  # the file's content is the experiment, not its place
        rows = "".join(f"{i},{math.sin(i / 5):.6f},{math.cos(i / 7):.6f}\n" for i in range(300))
        (tmp_path / "table.csv").write_text("t,a,b\n" + rows)
        over = {**over, "path": str(tmp_path / "table.csv")}
    cfg = resolve(model, task, over)
    assert config_hash(cfg) == digest
    assert set(over) - {"path", "k", "base", "stable"} <= {name for name, _ in cfg.extra}


# The fields that were RunConfig's and that only some families or tasks read (dropout …
# teacher_lam) became those parts' options, shared (options.SHARED): every run still stores and
# hashes them, at their value or the frozen default. The config hash and the digest of the
# stored config (to_dict: the same keys, in the same order) are the seqbench's of commit
# 1b447c2, where they were RunConfig's fields.
@pytest.mark.parametrize(
    ("model", "task", "over", "digest", "stored"),
    [
        ("gru", "adding", {},
         "b45569902f5a96654308e06710a61ebaf5fd770aa1047afb8ed05c0d1bb25da3",
         "76b6e88b3e7d950b5aafa04f1495b6200a9fe0ebe034d108033b69a05571f884"),
        ("gru", "adding", {"marker": "halves"},
         "5a570cff6a8f242de1bd23d1f275c7f8ed8ba64197b333b7ff47898cd1e3a8e6",
         "0b09bf1f6f890b10cfdf12c85fec2afca36190c3645ea46abab1144895a171eb"),
        ("tcn", "adding", {"dropout": 0.1},
         "f902d4e922d54f140ae8dedf5e23cda068aaa40123bfcb2fc68ffa13a2552ce7",
         "69aec9e97cf056fdcdc9ad80186a1612d7e15a2dcd6321b4ae045ec1a5873adf"),
        ("rnn", "adding", {"nonlinearity": "relu"},
         "e83d6845a92125b0b888b824f56dad7c03347baf0e245fc71669e91a431997f1",
         "5a795f8861526ed65491a816c3f4ae50132cf2ae3955d681614cc2deda0b7a61"),
        ("indrnn", "adding", {"deep": True, "magnitude": 3.0},
         "7cff6b8e4d00465eca1460bf44f20a24575fe4d752966b1eb8b532f50b99692c",
         "67d8589e4d2a0f4c2a3c09583a2dbef6b785a826ec13c4898a32e3df34c1af45"),
        ("window", "adding", {"base": "gru"},
         "12e30f0552a99e0644ea61c67dc5e4205062623d4410c8208e92ee6b4f75a3fe",
         "7dd2f5f3b8eb5adbad233e283e2f1e00dcb7a59e08d2aa24ab421a9a25d7a973"),
        ("lstm", "chorales", {"forget_bias": 1.0, "subset": 100},
         "fbd3836d9d99093c8874a3a99d5c7fa503ae5abc8735fccf6f4d78b386ab20ed",
         "4bfce7e4e3173d8b98f3ce2b2403b574885a4e0ed1aced0e918b8ecb6860fce6"),
        ("tcn", "copy", {"init": "paper", "levels": 3, "kernel_size": 3},
         "c17e2b5e3210b04874480d53300c3e447b9ec006507814c2cf1776616075b711",
         "d9a5f159bbcf5f5bf35f36d5df597dfbede0eee844228c81628648ce5d68d467"),
        ("gru", "teacher", {"teacher_lam": 0.5},
         "859a646f6404809e701d860b6097bbcfca5473b993b8f274f1350f1732c8176d",
         "b1007d53b744d56b5389b9c00a7361f813b7ccf79f8804bc0c36435d66fc0b80"),
        ("transformer", "adding", {"heads": 2},
         "4e612e12d96fdc2413c957df87bbeb2b6cf9ebae24fbc9dfe20a935aeddcc1fc",
         "14809bad9ed52604758bd3ca7276ef6bd38e038b342c20c3b0156588dd18733a"),
    ],
)  # fmt: skip
def test_a_shared_field_keeps_the_hash_and_the_stored_config(model, task, over, digest, stored):
    from seqbench.config import digest as sha
    from seqbench.options import SHARED

    cfg = resolve(model, task, over)
    assert config_hash(cfg) == digest
    assert sha(cfg.to_dict()) == stored
    assert set(SHARED) <= set(cfg.to_dict())  # GRU runs store kernel_size 7, as they always did
