#!/usr/bin/env bash
# One call on a lent GPU validates every CUDA path and takes the GPU numbers, in under 8
# minutes on an H100/H200-class GPU. Every line it prints also goes to the file it names at
# the start ($GPU_CHECK_LOG, default ./gpu_check-<host>-<time>.txt; under $OUT on the device).
#   bash benchmarks/gpu_check.sh        (repo root, after scripts/setup.sh)
set -uo pipefail
PY=${PY:-.venv/bin/python}
[ -x "$PY" ] || PY=python3
LOG=${GPU_CHECK_LOG:-${OUT:-.}/gpu_check-$(hostname)-$(date +%Y%m%d-%H%M%S).txt}
exec > >(tee -a "$LOG") 2>&1
echo "writing everything to $LOG"
DB=$(mktemp -d)/gpu_check.db
sb() { "$PY" -m seqbench --db "$DB" "$@"; }
step() { echo; echo "== $*  ($(date +%T))"; }

nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv || true
"$PY" -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, 'cuda', torch.cuda.is_available())"

step "CUDA kernel tests (triton: every variant, odd shapes, h0, dtypes, bf16 history)"
"$PY" -m pytest -q -m triton tests/ops -p no:cacheprovider

step "CUDA training smoke test, every model, fp32 and bf16"
for model in rnn lstm gru indrnn tcn gcnn window transformer; do
  for precision in fp32 bf16; do
    sb train --model "$model" --task adding --seq-len 200 --steps 100 --device cuda \
      --set precision=$precision --set eval_size=256 --quiet || echo "FAILED: $model $precision"
  done
done
sb train --model lstm --task adding --seq-len 200 --steps 100 --device cuda \
  --set precision=fp16 --set eval_size=256 --quiet || echo "FAILED: lstm fp16"

step "kernel benchmark (targets: triton ≥ 70% of copy bandwidth, ≥ 20× the autograd loop)"
sb bench kernels --device cuda --seq-len 5000 --batch 256 --hidden 1024 --format markdown
sb bench kernels --device cuda --seq-len 1000 --batch 32 --hidden 128 --format markdown

step "GPU sweep throughput (target: 8 per GPU ≥ 5× the points per minute of 1 per GPU)"
"$PY" benchmarks/gpu_sweep.py --per-gpu 1 8

step "done; numbers in $LOG"
