"""The IndRNN recurrence h_t = relu(x_t + u ⊙ h_{t-1}) behind one public function."""

from seqbench.ops.indrnn.naive import indrnn_naive


def indrnn(x, u, h0=None, backend: str = "auto"):
    """IndRNN recurrence; x: (B, T, N), u: (N,), h0: (B, N) or None -> h: (B, T, N) fp32.

    backend: "torch" (autograd reference) or "auto" (the fastest available for x's device).
    """
    from seqbench.errors import UsageError

    if backend not in ("auto", "torch"):
        raise UsageError(f"unknown IndRNN backend {backend!r}; valid: auto, torch")
    return indrnn_naive(x, u, h0)


__all__ = ["indrnn", "indrnn_naive"]
