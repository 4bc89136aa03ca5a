"""Memory tasks of today's recurrence benchmarks: multi-query associative recall (Zoology),
selective copying (the Mamba paper) and induction heads. Token inputs; the answer positions
carry labels, every other position the ignored label -100 (Zoology's convention); the metric
is the accuracy on the answers. Each task's `answer_sources` says, for every labelled position,
where in the input the information it needs sits: a model whose context does not reach back
that far sees nothing of it (tests/tasks/test_recall_tasks.py)."""

from __future__ import annotations

import torch

from seqbench.tasks.base import TaskArgs
from seqbench.tasks.specs.recall import recall_sizes
from seqbench.tasks.synthetic import SyntheticTask

IGNORE = -100
MQAR_POWER_A = 0.01  # Zoology's default: the key–query gap's power law


class TokenRecall(SyntheticTask):
    """Cross-entropy and accuracy over the labelled positions alone."""

    readout = "all"
    in_dim = 64  # the embedding width the backbone's encoder reads

    def __init__(self, args: TaskArgs):
        super().__init__(args)
        _, self.vocab, self.num_pairs = recall_sizes(self.name, args)
        self.out_dim = self.vocab

    def _flat(self, out, y):
        return out.reshape(-1, out.shape[-1]), y.reshape(-1)

    def loss(self, out, y):
        return torch.nn.functional.cross_entropy(*self._flat(out, y), ignore_index=IGNORE)

    def metric_sums(self, out, y):
        logits, labels = self._flat(out, y)
        keep = labels != IGNORE
        ce = torch.nn.functional.cross_entropy(logits[keep], labels[keep], reduction="sum")
        correct = (logits[keep].argmax(-1) == labels[keep]).sum()
        return float(ce), float(correct), float(keep.sum())

    def answer_sources(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        """For each (example, position) labelled in y, the earliest input position its answer
        needs (-1 where unlabelled)."""
        raise NotImplementedError


class MQAR(TokenRecall):
    """Multi-query associative recall as Zoology generates it (zoology/data/multiquery_ar.py):
    the first half of the vocabulary are keys, the second values; `num_pairs` distinct keys
    each with a distinct value, then the queries: each key once, at gaps drawn without
    replacement with p(g) ∝ a·g^(a−1), a = 0.01, every other position a random token. The
    label of a query's position is its key's value. Chance: 1/|values| = 2/vocab."""

    name = "mqar"

    def sample(self, n, gen):
        T, p, V = self.seq_len, self.num_pairs, self.vocab
        kv = V // 2
        keys = torch.rand(n, kv - 1, generator=gen).argsort(dim=1)[:, :p] + 1
        values = torch.rand(n, V - kv, generator=gen).argsort(dim=1)[:, :p] + kv
        context = 2 * p
        kvs = torch.zeros(n, context, dtype=torch.long)
        kvs[:, 0::2], kvs[:, 1::2] = keys, values
        space = (T - context) // 2
        w = MQAR_POWER_A * torch.arange(1, space + 1, dtype=torch.float64) ** (MQAR_POWER_A - 1)
        gaps = torch.multinomial(w.expand(n, space), p, replacement=False, generator=gen)
        queries = torch.zeros(n, T - context + 1, dtype=torch.long)
        queries.scatter_(1, gaps * 2, keys)
        examples = torch.cat([kvs, queries], dim=1)
        labels = torch.full((n, T + 1), IGNORE, dtype=torch.long)
        labels.scatter_(1, gaps * 2 + context + 1, values)
        x, y = examples[:, :-1], labels[:, 1:]
        noise = torch.randint(0, V, x.shape, generator=gen)
        return torch.where(x == 0, noise, x), y

    def answer_sources(self, x, y):
        p = self.num_pairs
        src = torch.full_like(y, -1)
        for i in range(p):  # the query of key i needs its value, at 2i + 1: out of sight,
            key = x[:, 2 * i : 2 * i + 1]  # the answer cannot even be guessed among the values
            asks = (x == key) & (y != IGNORE)
            asks[:, : 2 * p] = False
            src[asks] = 2 * i + 1
        return src

    def baseline(self):
        return 1.0 / (self.vocab - self.vocab // 2)


class SelectiveCopy(TokenRecall):
    """Selective copying (Gu & Dao 2023, §4.1; their generator was never released, so this one
    is seqbench's): `num_pairs` tokens from 1..vocab−2 at random positions, in order, among
    blanks (0) in the first T − num_pairs steps, then num_pairs markers (vocab − 1) at whose
    steps the tokens must be recalled in order. Chance: 1/(vocab − 2)."""

    name = "selective-copy"

    def sample(self, n, gen):
        T, m, V = self.seq_len, self.num_pairs, self.vocab
        region = T - m
        pos = torch.rand(n, region, generator=gen).argsort(dim=1)[:, :m].sort(dim=1).values
        tokens = torch.randint(1, V - 1, (n, m), generator=gen)
        x = torch.zeros(n, T, dtype=torch.long)
        x.scatter_(1, pos, tokens)
        x[:, region:] = V - 1
        y = torch.full((n, T), IGNORE, dtype=torch.long)
        y[:, region:] = tokens
        return x, y

    def answer_sources(self, x, y):
        n, T = x.shape
        m = self.num_pairs
        data = (x[:, : T - m] != 0).nonzero()  # (n·m, 2), row-major: each row's in order
        src = torch.full_like(y, -1)
        src[:, T - m :] = data[:, 1].reshape(n, m)
        return src

    def baseline(self):
        return 1.0 / (self.vocab - 2)


class Induction(TokenRecall):
    """Induction heads (Olsson et al. 2022; the Mamba paper's §4.1 setup): random tokens from
    0..vocab−2, a trigger (vocab − 1) once at a random position followed by the answer, and the
    trigger again at the last step, where the label is the token that followed it before.
    Chance: 1/(vocab − 1)."""

    name = "induction"

    def sample(self, n, gen):
        T, V = self.seq_len, self.vocab
        x = torch.randint(0, V - 1, (n, T), generator=gen)
        at = torch.randint(0, T - 2, (n,), generator=gen)
        rows = torch.arange(n)
        x[rows, at] = V - 1
        x[:, -1] = V - 1
        y = torch.full((n, T), IGNORE, dtype=torch.long)
        y[:, -1] = x[rows, at + 1]
        return x, y

    def answer_sources(self, x, y):
        src = torch.full_like(y, -1)
        first = (x[:, :-1] == self.vocab - 1).float().argmax(dim=1)
        src[:, -1] = first  # the trigger's first occurrence (the answer follows it)
        return src

    def baseline(self):
        return 1.0 / (self.vocab - 1)
