#!/usr/bin/env bash
# The GPU suite, for any machine with an NVIDIA GPU and nvcc on PATH:
#   1. builds and installs aotc for the GPU's own architecture,
#   2. runs every test marked `gpu` (every kernel against the NumPy reference,
#      through both real backends), among them what a real node does that the
#      fakes only model (tests/runtime/test_gpu_contexts.py): launches on
#      non-default streams (a driver stream, a pycuda Stream, a torch side
#      stream, a CuPy stream), CUDA-graph capture, contexts made current by
#      other code and a second GPU's, and a kernel's fault reported naming its
#      launch; the torch, CuPy and two-GPU cases skip, saying why, where
#      PyTorch with CUDA, CuPy or a second GPU is missing,
#   3. times max-plus forward and argmax at 4096^3 against the issue limit.
# Record what it prints in benchmarks/RESULTS.md.
set -euo pipefail
cd "$(dirname "$0")/.."

arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n 1 | tr -d '. ')
echo "gpu-suite: building for sm_${arch}"
python -m venv .gpu-venv
# shellcheck disable=SC1091
source .gpu-venv/bin/activate
python -m pip install --quiet --upgrade pip
AOTC_ARCHS="${arch}" python -m pip install --quiet ".[test,jit]"
# pycuda builds from source; where it can't, its backend's tests skip and say so.
python -m pip install --quiet pycuda || echo "gpu-suite: pycuda did not install; its tests will skip"

aotc doctor
pytest -m gpu -ra -p no:cacheprovider
python benchmarks/gemm_gpu.py --size "${AOTC_BENCH_SIZE:-4096}"
