#!/usr/bin/env bash
# The GPU suite, for any machine with an NVIDIA GPU and nvcc on PATH:
#   1. builds and installs aotc for the GPU's own architecture,
#   2. runs every test marked `gpu` (every kernel against the NumPy reference,
#      through both real backends), among them what a real node does that the
#      fakes only model (tests/runtime/test_gpu_contexts.py): launches on
#      non-default streams (a driver stream, a pycuda Stream, a torch side
#      stream, a CuPy stream), CUDA-graph capture, contexts made current by
#      other code and a second GPU's, and a kernel's fault reported naming its
#      launch; and the declared families of examples/rowops, built for this
#      GPU and called with CUDA tensors (with and without softmax's optional
#      batch), CuPy and staged NumPy arrays, and a family with declared strides
#      reading CUDA views and broadcasts in place
#      (tests/kernels/test_family_gpu.py); the torch, CuPy and two-GPU cases
#      skip, saying why, where PyTorch with CUDA, CuPy or a second GPU is missing;
#      and JAX arrays through the buffer_callback route on XLA's stream, under
#      jit, grad and vmap (tests/tropical/test_jax_gpu.py, and rowops' softmax
#      in tests/kernels/test_family_gpu.py), and rowops' softmax through
#      jaxlib's built-in launcher too, also inside XLA's command buffers (CUDA
#      graphs), where jax with its CUDA plugin is installed (else it skips,
#      saying so; the launcher needs the plugin at 0.11.1 or newer),
#   3. times every forward and argmax kernel at 4096^3 against the issue limit
#      (not with --no-timings).
# Record what it prints in benchmarks/RESULTS.md.
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)

arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n 1 | tr -d '. ')
echo "gpu-suite: building for sm_${arch}"
# The venv sees the machine's own packages: a GPU node's CUDA builds of PyTorch
# and CuPy are what the torch and CuPy cases must run against, and a fresh venv
# would hold neither. `--system-site-packages` is not enough where python3 is
# itself a venv (it exposes the base interpreter's packages, not the venv's),
# so the venv gets a .pth naming python3's own site-packages.
machine_sites=$(python3 -c 'import site; print("\n".join(site.getsitepackages()))')
python3 -m venv .gpu-venv
# shellcheck disable=SC1091
source .gpu-venv/bin/activate
echo "${machine_sites}" > "$(python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')/gpu_suite_machine.pth"
if python -m pip download --quiet --no-deps --retries 0 --timeout 10 -d "$(mktemp -d)" pip >/dev/null 2>&1; then
    python -m pip install --quiet --upgrade pip
    AOTC_ARCHS="${arch}" python -m pip install --quiet ".[test,jit]"
    # pycuda builds from source; where it can't, its backend's tests skip and say so.
    python -m pip install --quiet pycuda || echo "gpu-suite: pycuda did not install; its tests will skip"
    # JAX with its CUDA plugin, where the machine has none: the newest this
    # Python gets (0.11.1+ carries the launcher's module images; Python 3.11
    # stops at 0.10.2, which runs the buffer_callback cases only).
    python -c 'import jax_plugins' 2>/dev/null || python -m pip install --quiet "jax[cuda13]" ||
        echo "gpu-suite: jax[cuda13] did not install; the JAX cases will skip"
else
    # A node with no package index (many clusters): build against what is
    # installed, plus any wheels in GPU_SUITE_WHEELS (a folder). The build
    # needs scikit-build-core, Jinja2, PyYAML, CMake, ninja and nvcc; pip
    # names whichever is missing.
    echo "gpu-suite: no package index reachable; building with this machine's packages (no build isolation)"
    offline=(--quiet --no-index)
    if [[ -n "${GPU_SUITE_WHEELS:-}" ]]; then
        offline+=(--find-links "${GPU_SUITE_WHEELS}")
    fi
    python -m pip install "${offline[@]}" "scikit-build-core>=0.10" "jinja2>=3.1" "pyyaml>=6.0"
    AOTC_ARCHS="${arch}" python -m pip install "${offline[@]}" --no-deps --no-build-isolation .
    python -m pip install "${offline[@]}" --no-build-isolation pycuda ||
        echo "gpu-suite: pycuda did not install (put its sdist and wheels in GPU_SUITE_WHEELS); its tests will skip"
fi

aotc doctor
# The tests must import the installed aotc, not the checkout's (which holds no
# fatbins): `python -m` would put the checkout first on sys.path, so
# PYTHONSAFEPATH keeps it off (Python 3.11+), and AOTC_TEST_LIBRARY names the
# installed library for an older Python. A missing library then fails, never skips.
installed=$(cd / && python -c 'import aotc; print(aotc.library_dir("tropical"))')
status=0
PYTHONSAFEPATH=1 AOTC_TEST_LIBRARY="${installed}" AOTC_REQUIRE_INSTALLED=1 \
    python -m pytest -m gpu -ra -p no:cacheprovider || status=$?
# The timings run even where a test failed: both are worth recording.
if [[ "${1:-}" != "--no-timings" ]]; then
    (cd / && python "${repo}/benchmarks/gemm_gpu.py" --shape "${AOTC_BENCH_SHAPE:-4096}") || status=$?
fi
exit "${status}"
