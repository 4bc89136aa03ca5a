import pytest

from seqbench.configure import config_hash
from seqbench.errors import UnknownNameError, UsageError
from seqbench.sweep.presets import PRESETS, preset_grids
from seqbench.sweep.spec import expand, grid_from_flags, parse_range


@pytest.mark.parametrize(
    ("text", "values"),
    [
        ("1,2,4", [1, 2, 4]),
        ("1:16:x2", [1, 2, 4, 8, 16]),
        ("1:256:x2", [1, 2, 4, 8, 16, 32, 64, 128, 256]),
        ("1:20:x2", [1, 2, 4, 8, 16]),
        ("0:10:+5", [0, 5, 10]),
        ("3:3:x2", [3]),
        ("1:100:x10", [1, 10, 100]),
    ],
)
def test_parse_range(text, values):
    assert parse_range(text) == values


@pytest.mark.parametrize("text", ["1:0:x2", "1:8:x1", "0:8:x2", "1:8", "a:b:x2", "1:8:+0", ""])
def test_malformed_ranges(text):
    with pytest.raises(UsageError):
        parse_range(text)


def test_expand_is_the_product_and_dedupes():
    grid = grid_from_flags("rnn,tcn", "adding", "1:4:x2", "0,1", ["hidden=8,16"])
    points = expand([grid, grid])  # the second copy adds nothing
    assert len(points) == 2 * 1 * 3 * 2 * 2
    assert len({config_hash(p) for p in points}) == len(points)
    assert {p.hidden for p in points} == {8, 16}


@pytest.mark.parametrize(
    ("kw", "err", "msg"),
    [
        ({"models": "", "tasks": "adding"}, UsageError, "empty grid"),
        (
            {"models": "rnn", "tasks": "adding", "sets": ["lrr=0.1"]},
            UnknownNameError,
            "Did you mean 'lr'",
        ),
        (
            {"models": "rnn", "tasks": "adding", "sets": ["lr=0,0.1"]},
            UsageError,
            "lr must be positive",
        ),
        ({"models": "lstn", "tasks": "adding"}, UnknownNameError, "Did you mean 'lstm'"),
    ],
)
def test_bad_grids(kw, err, msg):
    with pytest.raises(err, match=msg):
        expand([grid_from_flags(kw["models"], kw["tasks"], None, "0", kw.get("sets"))])


@pytest.mark.parametrize("preset", list(PRESETS))
@pytest.mark.parametrize("scale", ["tiny", "small", "paper"])
def test_presets_expand(preset, scale):
    points = expand(preset_grids(preset, scale))
    assert len(points) >= 3
    if scale == "tiny":  # CI runs every preset at tiny: at most 600 steps (MQAR's)
        assert all(p.steps <= 600 for p in points)


def test_unknown_preset_and_scale():
    with pytest.raises(UnknownNameError, match="miller-hardt"):
        preset_grids("miller", "tiny")
    with pytest.raises(UsageError, match="`scale`"):
        preset_grids("bai-tcn", "huge")


@pytest.mark.parametrize("scale", ["tiny", "small", "paper"])
def test_bai_tcn_is_size_matched_within_each_task(scale):
    """Within each task every model is built, and its parameters counted, from the config
    the sweep trains: all within 5% of one budget, with the same steps and batch (Bai et
    al. matched sizes; the budgets are the preset's, the counts the models' own)."""
    from seqbench.models.base import count_params
    from seqbench.training.setup import prepare

    by_task: dict[str, list] = {}
    variants = []
    for cfg in expand(preset_grids("bai-tcn", scale)):
        if cfg.seed == 0 and cfg.task not in ("fashion", "pfashion"):  # GPU-sized datasets
            fitted, _, model, _ = prepare(cfg)
            rows = variants if cfg.symbols == "tokens" else by_task.setdefault(cfg.task, [])
            rows.append((cfg, count_params(model), fitted.hidden))
    assert set(by_task) == {"adding", "copy", "digits", "pdigits"}
    for task, rows in by_task.items():
        assert {c.model for c, _, _ in rows} == {"tcn", "lstm", "gru", "rnn"}
        (budget,) = {c.params for c, _, _ in rows}
        assert all(abs(n - budget) <= 0.05 * budget for _, n, _ in rows), (task, rows)
        assert len({(c.steps, c.batch_size, c.seq_len) for c, _, _ in rows}) == 1, task
    # copy's token variant is the same TCN, width and budget, fed embedded tokens
    ((variant, _, width),) = variants
    ((same, _, fitted),) = [r for r in by_task["copy"] if r[0].model == "tcn"]
    assert (variant.model, width, variant.steps) == ("tcn", fitted, same.steps)


@pytest.mark.parametrize("scale", ["tiny", "small", "paper"])
def test_indrnn_adding_runs_the_authors_script_setup(scale):
    """One task for every model (markers one in each half, the same T, steps and batch 32);
    the IndRNN and the IRNN with the script's Adam 2e-4, element-wise clip at 10 and no norm
    clip, lr /10 after every 20,100 steps, which the paper scale (60,000 steps) reaches."""
    points = expand(preset_grids("indrnn-adding", scale))
    assert {c.model for c in points} == {"indrnn", "irnn", "lstm", "rnn"}
    for T in {c.seq_len for c in points}:
        row = [c for c in points if c.seq_len == T]
        assert {(c.marker, c.steps, c.batch_size) for c in row} == {("halves", row[0].steps, 32)}
    for c in points:
        if c.model in ("indrnn", "irnn"):
            assert (c.lr, c.clip, c.clip_value, c.lr_decay_every) == (2e-4, None, 10.0, 20100)
    if scale == "paper":
        assert {c.steps for c in points} == {60000}
    lstm = [c for c in points if c.model == "lstm"]
    assert {c.forget_bias for c in lstm} == {1.0}
