"""Synthetic tasks with fresh training data every batch: adding, copy memory, teacher RNN."""

from __future__ import annotations

import math
from functools import cached_property

import torch

from seqbench.tasks.base import Task, TaskArgs, generator


class SyntheticTask(Task):
    """Valid and test are fixed sets of `eval_size` sequences from their own generator streams."""

    synthetic = True

    def sample(self, n: int, gen: torch.Generator):
        raise NotImplementedError

    def train_batch(self, batch_size, gen):
        return self.sample(batch_size, gen)

    @cached_property
    def _eval_sets(self):
        return {
            split: self.sample(self.args.eval_size, generator(self.args.seed, stream))
            for split, stream in (("valid", 1), ("test", 2))
        }

    def eval_batches(self, split, batch_size):
        x, y = self._eval_sets[split]
        for i in range(0, x.shape[0], batch_size):
            yield x[i : i + batch_size], y[i : i + batch_size]


class RegressionTask(SyntheticTask):
    """Mean squared error is both the loss and the metric."""

    def loss(self, out, y):
        return torch.nn.functional.mse_loss(out, y)

    def metric_sums(self, out, y):
        se = float(((out - y) ** 2).sum())
        return se, se, float(y.numel())


class Adding(RegressionTask):
    """Two channels: values U(0,1) and a marker channel with two 1s; the target is the sum of the
    two marked values. Markers uniform over distinct positions (Bai et al.) or one in each half
    (IndRNN, uRNN). Predicting 1 scores Var(a + b) = 1/6."""

    name = "adding"
    in_dim, out_dim = 2, 1

    def sample(self, n, gen):
        T = self.seq_len
        values = torch.rand(n, T, generator=gen)  # (n, T)
        if self.args.marker == "halves":
            half = T // 2
            first = torch.randint(0, half, (n,), generator=gen)
            second = torch.randint(half, T, (n,), generator=gen)
        else:
            first = torch.randint(0, T, (n,), generator=gen)
            # a distinct second position: shift by 1..T-1 around the circle
            second = (first + torch.randint(1, T, (n,), generator=gen)) % T
        marks = torch.zeros(n, T)
        rows = torch.arange(n)
        marks[rows, first] = 1.0
        marks[rows, second] = 1.0
        x = torch.stack([values, marks], dim=-1)  # (n, T, 2)
        y = (values * marks).sum(1, keepdim=True)  # (n, 1)
        return x, y

    def baseline(self):
        return 1.0 / 6.0


class CopyMemory(SyntheticTask):
    """Copy memory (Bai et al.): 10 symbols from {1..8}, T-1 blanks (0), then the digit 9 eleven
    times (the first is the delimiter, the other ten mark the steps that recall): input length
    T+20, as in the paper and its code (locuslab/TCN copy_memory/utils.py). The output must be
    blank everywhere except the last 10 steps, which reproduce the symbols. Cross-entropy
    averaged over all T+20 steps, so a memoryless model that outputs blanks and then guesses
    scores 10·ln 8 / (T+20). symbols="float" (the default) feeds each symbol's value as one
    float channel, as the reference code does (`x.unsqueeze(1)`); "tokens" (and runs from
    before the option, None) feeds ids for the model to embed."""

    name = "copy"
    readout = "all"
    in_dim, out_dim, vocab = 16, 10, 10

    def __init__(self, args: TaskArgs):
        super().__init__(args)
        self.floats = args.symbols == "float"
        if self.floats:
            self.in_dim, self.vocab = 1, None

    def sample(self, n, gen):
        T = self.seq_len
        symbols = torch.randint(1, 9, (n, 10), generator=gen)
        x = torch.zeros(n, T + 20, dtype=torch.long)
        x[:, :10] = symbols
        x[:, T + 9 :] = 9
        y = torch.zeros(n, T + 20, dtype=torch.long)
        y[:, -10:] = symbols
        if self.floats:
            return x.float().unsqueeze(-1), y  # (n, T+20, 1) values, (n, T+20) ids
        return x, y  # (n, T+20) ids each

    def loss(self, out, y):
        return torch.nn.functional.cross_entropy(out.reshape(-1, self.out_dim), y.reshape(-1))

    def metric_sums(self, out, y):
        ce = torch.nn.functional.cross_entropy(
            out.reshape(-1, self.out_dim), y.reshape(-1), reduction="sum"
        )
        return float(ce), float(ce), float(y.numel())

    def baseline(self):
        return 10 * math.log(8) / (self.seq_len + 20)


class Teacher(RegressionTask):
    """A random teacher RNN h_t = tanh(W h_{t-1} + U x_t), y_t = v·h_t with W = λ·Q, Q orthogonal,
    so ‖W‖₂ = λ exactly (stable for λ < 1). Inputs x_t ~ N(0, 1); the student regresses y_t.
    The baseline is the MSE of predicting the test set's mean.

    teacher_kind=linear: h_t = W h_{t-1} + U x_t and y_t = √(1 − λ²)·v·h_t (about unit
    variance at every λ). Then the output's dependence on x_{t−j} is v·(λQ)^j U: its own
    truncation error, the output with inputs before the last k dropped, is λ^k times a
    rotation of the state, so it decays at exactly λ per step (the tanh teacher, driven at unit
    variance, saturates and forgets faster than λ); `optimal_truncated_error` is the closed form
    of the best context-k error and `closed_form_k_star` the k* it gives."""

    name = "teacher"
    readout = "all"
    in_dim, out_dim = 4, 1
    teacher_hidden = 32

    def __init__(self, args: TaskArgs):
        super().__init__(args)
        g = generator(args.seed, 7)
        H = self.teacher_hidden
        q, _ = torch.linalg.qr(torch.randn(H, H, generator=g, dtype=torch.float64))
        self.W = (args.teacher_lam * q).float()  # (H, H), spectral norm λ
        self.U = torch.randn(H, self.in_dim, generator=g) / math.sqrt(self.in_dim)
        self.v = torch.randn(H, generator=g) / math.sqrt(H)
        self.linear = args.teacher_kind == "linear"
        if self.linear:
            self.v = self.v * math.sqrt(1 - args.teacher_lam**2)

    @torch.no_grad()
    def run_teacher(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.zeros(x.shape[0], self.teacher_hidden)
        ys = []
        drive = x @ self.U.T  # (n, T, H)
        for t in range(x.shape[1]):
            h = h @ self.W.T + drive[:, t]
            if not self.linear:
                h = torch.tanh(h)
            ys.append(h @ self.v)
        return torch.stack(ys, dim=1)[..., None]  # (n, T, 1)

    def sample(self, n, gen):
        x = torch.randn(n, self.seq_len, self.in_dim, generator=gen)
        return x, self.run_teacher(x)

    def optimal_truncated_error(self) -> list[float]:
        """e*(k) for k = 0 … T, the linear teacher's closed form: y_t = Σ_j a_j·x_{t−j} with
        a_j = v·W^j·U and white unit inputs, so the best a model that sees only the last k inputs
        can do is to leave out the lags ≥ k, whose variance is Σ_{j≥k} ‖a_j‖² (at step t, the
        lags up to t), averaged over the T steps. e*(0) is the output's variance (the trivial
        baseline). The one closed form seqbench uses: the per-lag variances of a finite, drawn
        teacher are not exactly λ^{2j} (its readout direction, the rotation, finite T), so
        λ is its long-run rate, not its rate at every lag, and ⌈log ε / (2 log λ)⌉ is only an
        approximation of the k* below (15 and 30 against 13 and 26 at λ = 0.9 and 0.95)."""
        if not self.linear:
            raise ValueError("the closed form is the linear teacher's (teacher_kind=linear)")
        W, M, v = self.W.double(), self.U.double(), self.v.double()
        lag_var = []
        for _ in range(self.seq_len):
            lag_var.append(float(((v @ M) ** 2).sum()))
            M = W @ M
        T = self.seq_len
        return [sum(sum(lag_var[k : t + 1]) for t in range(T)) / T for k in range(T + 1)]

    def baseline(self):
        y = self._eval_sets["test"][1]
        return float(((y - y.mean()) ** 2).mean())


class MemoryFunction(RegressionTask):
    """y_t = Σ_{s≤t} ρ(s)·x_{t−s} (+ noise) for a white scalar input and a memory function ρ
    (exponential, power law, impulse or damped cosine: tasks/memory_functions.py, which holds
    the kernels, their checks and the closed form e*(k)). The baseline is the MSE of
    predicting the test set's mean, as the teacher's."""

    name = "memory-function"
    readout = "all"
    in_dim, out_dim = 1, 1

    def __init__(self, args: TaskArgs):
        super().__init__(args)
        from seqbench.tasks import memory_functions as mf

        self.noise = mf.params(args)["noise"]
        rho = torch.tensor(mf.rho(args, self.seq_len), dtype=torch.float64)
        self.kernel = rho.flip(0).view(1, 1, -1)  # conv1d correlates: lag s at position T−1−s

    def sample(self, n, gen):
        T = self.seq_len
        x = torch.randn(n, T, 1, generator=gen)
        padded = torch.nn.functional.pad(x.double().transpose(1, 2), (T - 1, 0))
        y = torch.nn.functional.conv1d(padded, self.kernel).transpose(1, 2)  # (n, T, 1)
        if self.noise:
            y = y + self.noise * torch.randn(n, T, 1, generator=gen, dtype=torch.float64)
        return x, y.float()

    def optimal_truncated_error(self) -> list[float]:
        """e*(k) for k = 0 … T in closed form (tasks/memory_functions.py)."""
        from seqbench.tasks import memory_functions as mf

        return mf.optimal_truncated_error(self.args, self.seq_len)

    def baseline(self):
        y = self._eval_sets["test"][1]
        return float(((y - y.mean()) ** 2).mean())


def closed_form_k_star(errors: list[float], epsilon: float, best_k: int | None = None) -> int:
    """k*(ε) of an optimal truncated error e*(k), k = 0 … T (Teacher.optimal_truncated_error,
    averaged over seeds as `memory` averages its cells): the smallest k ≥ 1 with
    e*(k) − e*(b) ≤ ε·(e*(0) − e*(b)), the tolerance relative to the gap when the best model
    is the optimum at the most context it has, b = `best_k` (default T: the whole input; a
    k-sweep capped at --max-k with no recurrent reference has at most that context, and its
    best cell's optimum is e*(max_k)). e*(T) is 0 for the teacher, the output noise's variance
    for a noisy memory function."""
    floor = errors[-1] if best_k is None else errors[best_k]
    return min(
        k for k in range(1, len(errors)) if errors[k] - floor <= epsilon * (errors[0] - floor)
    )
