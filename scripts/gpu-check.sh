#!/usr/bin/env bash
# GPU check of the probe model (bench/bench_gpu_check.py): on a machine with CUDA GPUs, build both
# variants, measure GPU memory and probe-forward latency with transformers on cuda, serve the
# slim probe with vLLM once per layout (TP 1/2/4/8 x DP n/TP with expert parallelism, from the
# command `faultsense probe serve --dry-run` prints; routed experts via Model Runner V2), run
# every probe with the vllm executor (each pinned to the engine of its lowest GPU by the
# X-data-parallel-rank header; the engine layout checked from /server_info, served with
# VLLM_SERVER_DEV_MODE=1), and run the local executor on NCCL in both engine modes
# (member_only, all_ranks). Writes bench/results/gpu_check.json. Never run yet: no GPU machine.
#
# Usage: PYTHON=/path/to/python-with-cuda-torch VLLM_VENV=/path/to/vllm-venv scripts/gpu-check.sh [args]
#   PYTHON     python with this project importable and a CUDA build of torch (default .venv/bin/python)
#   VLLM_VENV  venv with a CUDA build of vLLM (optional; without it the vLLM part is recorded as skipped)
# Fails fast (exit 2) where no CUDA GPU is visible.
set -euo pipefail
cd "$(dirname "$0")/.."
python="${PYTHON:-.venv/bin/python}"

if ! command -v nvidia-smi >/dev/null 2>&1 || ! nvidia-smi -L >/dev/null 2>&1; then
  echo "gpu-check: no NVIDIA GPU here (nvidia-smi missing or lists none); run this on a CUDA machine" >&2
  exit 2
fi
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv
if ! "$python" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)"; then
  echo "gpu-check: torch in $python cannot use CUDA (CPU build?); set PYTHON to a python with CUDA torch" >&2
  exit 2
fi
args=("$@")
if [ -n "${VLLM_VENV:-}" ]; then
  args+=(--vllm-venv "$VLLM_VENV")
fi
exec "$python" -m bench.bench_gpu_check "${args[@]}"
