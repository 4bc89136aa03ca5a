"""IRNN, measured from the outside: at init a state persists unchanged through steps with no
input (identity recurrence, zero biases, ReLU), and it trains through the CLI."""

import torch

from seqbench.config import ModelArgs
from seqbench.models import make_backbone


def test_at_init_a_state_persists_through_steps_with_no_input():
    bb = make_backbone("irnn", 3, ModelArgs(seq_len=100, hidden=16, nonlinearity="relu"))
    h0 = torch.rand(1, 4, 16)  # (layers, batch, hidden), non-negative: ReLU keeps it
    y, h = bb(torch.zeros(4, 100, 3), h0)
    assert torch.equal(y[:, -1], h0[0]) and torch.equal(h, h0)
    assert bb.rnn.nonlinearity == "relu"
    assert float(bb.rnn.weight_ih_l0.detach().std()) < 0.003  # N(0, 0.001²) input weights


def test_irnn_trains_and_is_refused_a_tanh(cli):
    r = cli("train", "-m", "irnn", "-t", "adding", "--seq-len", "20", "--steps", "5", "-q")
    assert r.exit_code == 0, r.output
    r = cli("train", "-m", "irnn", "-t", "adding", "--set", "nonlinearity=tanh")
    assert r.exit_code == 2 and "irnn is a ReLU RNN" in r.output
