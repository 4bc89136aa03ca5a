"""seqbench's TCN against the reference TCN (locuslab/TCN, Bai et al.'s published code) on the
same data, seed, optimiser and budget: the learning curves side by side.

The reference is re-implemented here as its code behaves (not vendored): `TemporalBlock` with
torch.nn.utils.weight_norm (the old hook-based one the repository uses), Chomp1d for causality,
an `init_weights` that draws conv.weight from N(0, 0.01) — which weight norm recomputes away on
the next forward, so the dilated convs keep Conv1d's default init — N(0, 0.01) for the 1×1
downsample and the output layer, and the last step read out. A third column trains seqbench's
TCN with `init = "paper"` (the paper's text: every conv N(0, 0.01)) to show what the difference
costs. A future change that loses the reference behaviour shows here as curves that part.

    .venv/bin/python benchmarks/tcn_reference.py                  # adding, T = 200, 1500 steps
    .venv/bin/python benchmarks/tcn_reference.py --steps 3000 --seeds 0 1
    .venv/bin/python benchmarks/tcn_reference.py --task copy      # symbols as floats or tokens
"""

from __future__ import annotations

import argparse
import time
import warnings
from dataclasses import replace

import torch
from torch import nn

from seqbench.configure import make_config
from seqbench.models import build_model, make_backbone
from seqbench.tasks import make_task
from seqbench.tasks.base import generator


class Chomp1d(nn.Module):
    def __init__(self, chomp: int):
        super().__init__()
        self.chomp = chomp

    def forward(self, x):
        return x[:, :, : -self.chomp].contiguous()


class RefBlock(nn.Module):
    def __init__(self, c_in, c_out, k, dilation, dropout):
        super().__init__()
        from torch.nn.utils import weight_norm  # deprecated; what the reference ran

        pad = (k - 1) * dilation
        self.conv1 = weight_norm(nn.Conv1d(c_in, c_out, k, padding=pad, dilation=dilation))
        self.conv2 = weight_norm(nn.Conv1d(c_out, c_out, k, padding=pad, dilation=dilation))
        self.net = nn.Sequential(
            self.conv1,
            Chomp1d(pad),
            nn.ReLU(),
            nn.Dropout(dropout),
            self.conv2,
            Chomp1d(pad),
            nn.ReLU(),
            nn.Dropout(dropout),
        )
        self.downsample = nn.Conv1d(c_in, c_out, 1) if c_in != c_out else None
        self.conv1.weight.data.normal_(0, 0.01)  # undone by weight norm's pre-forward hook
        self.conv2.weight.data.normal_(0, 0.01)
        if self.downsample is not None:
            self.downsample.weight.data.normal_(0, 0.01)

    def forward(self, x):
        res = x if self.downsample is None else self.downsample(x)
        return torch.relu(self.net(x) + res)


class RefTCN(nn.Module):
    """adding_problem/model.py (the last step read out) and copy_memory/model.py (every step):
    TemporalConvNet, then a linear layer with weight N(0, 0.01)."""

    def __init__(self, c_in, c_out, channels, k, last: bool, dropout=0.0):
        super().__init__()
        chans = [c_in, *channels]
        self.tcn = nn.Sequential(
            *(RefBlock(chans[i], chans[i + 1], k, 2**i, dropout) for i in range(len(channels)))
        )
        self.linear = nn.Linear(channels[-1], c_out)
        self.linear.weight.data.normal_(0, 0.01)
        self.last = last

    def forward(self, x):  # x: (B, T, D) as seqbench's tasks give it
        y = self.tcn(x.transpose(1, 2))  # (B, C, T)
        return self.linear(y[:, :, -1] if self.last else y.transpose(1, 2))


class AsFloat(nn.Module):
    """Copy symbols fed as one float channel (the reference script's `x.unsqueeze(1)`), not as
    tokens: token ids (B, T) -> (B, T, 1)."""

    def __init__(self, model):
        super().__init__()
        self.model = model

    def forward(self, x):
        return self.model(x.float().unsqueeze(-1))


def load_reference_weights(ours, ref: RefTCN) -> None:
    """Copy the reference model's parameters (weight norm's g and v, biases, downsample, output
    layer) into seqbench's TCN, so that both start from the very same function."""
    with torch.no_grad():
        for mine, theirs in zip(ours.backbone.blocks, ref.tcn, strict=True):
            for a, b in ((mine.conv1.conv, theirs.conv1), (mine.conv2.conv, theirs.conv2)):
                a.parametrizations.weight.original0.copy_(b.weight_g)
                a.parametrizations.weight.original1.copy_(b.weight_v)
                a.bias.copy_(b.bias)
            if theirs.downsample is not None:
                mine.downsample.load_state_dict(theirs.downsample.state_dict())
        ours.head.load_state_dict(ref.linear.state_dict())


def curve(model, task, cfg, steps, every, seed, clip):
    """Valid metric every `every` steps; `clip`: the gradient-norm clip after backward (None:
    none, as the reference code behaves: its copy script calls clip_grad_norm_ before
    loss.backward(), on the previous step's cleared gradients, so it never clips)."""
    from seqbench.training.setup import make_optimizer

    opt = make_optimizer(cfg, model)
    gen = generator(seed, 3)  # the same training batches for every model
    out, t0 = [], time.perf_counter()
    for step in range(1, steps + 1):
        x, y = task.train_batch(cfg.batch_size, gen)
        loss = task.loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        if clip:
            nn.utils.clip_grad_norm_(model.parameters(), clip)
        opt.step()
        if step % every == 0:
            model.eval()
            with torch.no_grad():
                out.append(task.evaluate(model, "valid", 500)["metric"])
            model.train()
    return out, time.perf_counter() - t0


def contenders(task_name, task, cfg, levels, seed):
    """name -> a fresh model, each initialised from `seed`."""
    k, chans = cfg.kernel_size, [cfg.hidden] * levels
    last = task.readout == "last"

    def seeded(make):
        torch.manual_seed(seed)
        return make()

    def ours(init, in_dim=None):
        args = replace(cfg, init=init).model_args(task.seq_len)
        if in_dim is None:  # as the task feeds it
            return build_model("tcn", task, args)
        from seqbench.models.base import SequenceModel

        return AsFloat(
            SequenceModel(make_backbone("tcn", in_dim, args), task.out_dim, task.readout)
        )

    if task_name == "copy":  # the reference feeds symbols as one float channel
        return {
            "reference (locuslab)": seeded(
                lambda: AsFloat(RefTCN(1, task.out_dim, chans, k, last))
            ),
            "seqbench, float input": seeded(lambda: ours("reference", in_dim=1)),
            "seqbench, tokens": seeded(lambda: ours("reference")),
        }

    def same_start():  # seqbench's TCN from the reference model's own initial weights
        m = ours("reference")
        load_reference_weights(m, seeded(lambda: RefTCN(task.in_dim, task.out_dim, chans, k, last)))
        return m

    return {
        "reference (locuslab)": seeded(lambda: RefTCN(task.in_dim, task.out_dim, chans, k, last)),
        "seqbench, its weights": same_start(),
        "seqbench init=reference": seeded(lambda: ours("reference")),
        "seqbench init=paper": seeded(lambda: ours("paper")),
    }


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--task", choices=["adding", "copy"], default="adding")
    p.add_argument("--seq-len", type=int, default=200)
    p.add_argument("--levels", type=int, default=None, help="default: seqbench's for T")
    p.add_argument("--steps", type=int, default=1500)
    p.add_argument("--every", type=int, default=250)
    p.add_argument("--seeds", type=int, nargs="+", default=[0])
    a = p.parse_args()
    warnings.filterwarnings("ignore", category=FutureWarning)  # torch.nn.utils.weight_norm
    for seed in a.seeds:
        over = {"seq_len": a.seq_len, "seed": seed, "eval_size": 500}
        if a.levels:
            over["levels"] = a.levels
        cfg = make_config("tcn", a.task, over)
        task = make_task(a.task, cfg.task_args())
        levels = build_model("tcn", task, cfg.model_args(task.seq_len)).backbone.levels
        runs = {}
        for name, model in contenders(a.task, task, cfg, levels, seed).items():
            clip = None if name.startswith("reference") else cfg.clip  # see curve()
            runs[name] = curve(model, task, cfg, a.steps, a.every, seed, clip)
        print(
            f"\n{a.task} T={a.seq_len}, seed {seed}: TCN K={cfg.kernel_size}, {levels} levels, "
            f"{cfg.hidden} channels, {cfg.optimizer} {cfg.lr:g}, clip {cfg.clip} (the reference: "
            f"none), batch "
            f"{cfg.batch_size}; valid {task.metric} (trivial {task.baseline():.4g})"
        )
        names = list(runs)
        print(f"{'step':>6} " + " ".join(f"{n:>24}" for n in names))
        for i in range(a.steps // a.every):
            vals = " ".join(f"{runs[n][0][i]:>24.4f}" for n in names)
            print(f"{(i + 1) * a.every:>6} {vals}")
        print(f"{'sec':>6} " + " ".join(f"{runs[n][1]:>24.0f}" for n in names))


if __name__ == "__main__":
    main()
