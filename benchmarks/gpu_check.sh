#!/usr/bin/env bash
# One call on a lent GPU validates the CUDA paths: the Triton kernel tests on CUDA, then the
# kernel benchmark at the target size. Under 5 minutes on an H100/H200-class GPU.
# Usage (repo root, after scripts/setup.sh or with seqbench installed): bash benchmarks/gpu_check.sh
set -uo pipefail
PY=${PY:-.venv/bin/python}
[ -x "$PY" ] || PY=python3
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || true
"$PY" -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, 'cuda', torch.cuda.is_available())"
echo "== CUDA kernel tests"
"$PY" -m pytest -q -m triton tests/ops -p no:cacheprovider
echo "== CUDA training smoke test (indrnn, triton backend)"
"$PY" -m seqbench --db /tmp/gpu_check.db train --model indrnn --task adding --seq-len 1000 \
  --steps 200 --device cuda --backend triton --quiet
echo "== kernel benchmark"
"$PY" -m seqbench --db /tmp/gpu_check.db bench kernels --device cuda --seq-len 5000 --batch 256 \
  --hidden 1024 --format markdown
"$PY" -m seqbench --db /tmp/gpu_check.db bench kernels --device cuda --seq-len 1000 --batch 32 \
  --hidden 128 --format markdown
