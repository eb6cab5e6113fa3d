#!/usr/bin/env bash
# ci/gpu-suite.sh's install step, in the venv it activated: aotc for sm_$1 (and
# the test extras), pycuda and the JAX CUDA plugin where they can be had.
# A node with no package index builds against the machine's own packages,
# plus any wheels and sdists in GPU_SUITE_WHEELS; GPU_SUITE_PYCUDA=0 skips pycuda.
set -euo pipefail
arch=$1
if python -m pip download --quiet --no-deps --retries 0 --timeout 10 -d "$(mktemp -d)" pip >/dev/null 2>&1; then
    python -m pip install --quiet --upgrade pip
    AOTC_ARCHS="${arch}" python -m pip install --quiet ".[test,jit]"
    if [[ "${GPU_SUITE_PYCUDA:-1}" == 0 ]]; then
        echo "gpu-suite: pycuda not built (GPU_SUITE_PYCUDA=0); its tests will skip"
    else
        # pycuda builds from source; where it can't, its backend's tests skip and say so.
        python -m pip install --quiet pycuda || echo "gpu-suite: pycuda did not install; its tests will skip"
    fi
    # JAX with its CUDA plugin, where the machine has none: the newest this
    # Python gets (0.11.1+ carries the launcher's module images; Python 3.11
    # stops at 0.10.2, which runs the buffer_callback cases only).
    python -c 'import jax_plugins' 2>/dev/null || python -m pip install --quiet "jax[cuda13]" ||
        echo "gpu-suite: jax[cuda13] did not install; the JAX cases will skip"
else
    # A node with no package index (many clusters): build against what is
    # installed, plus any wheels in GPU_SUITE_WHEELS (a folder). The build
    # needs scikit-build-core, Jinja2, PyYAML, CMake, ninja and nvcc; pip
    # names whichever is missing. The JAX CUDA plugin cannot come from here:
    # the JAX cases skip, saying so, unless the machine has it.
    echo "gpu-suite: no package index reachable; building with this machine's packages (no build isolation)"
    offline=(--quiet --no-index)
    if [[ -n "${GPU_SUITE_WHEELS:-}" ]]; then
        offline+=(--find-links "${GPU_SUITE_WHEELS}")
    fi
    python -m pip install "${offline[@]}" "scikit-build-core>=0.10" "jinja2>=3.1" "pyyaml>=6.0"
    AOTC_ARCHS="${arch}" python -m pip install "${offline[@]}" --no-deps --no-build-isolation .
    if [[ "${GPU_SUITE_PYCUDA:-1}" == 0 ]]; then
        echo "gpu-suite: pycuda not built (GPU_SUITE_PYCUDA=0); its tests will skip"
    else
        python -m pip install "${offline[@]}" --no-build-isolation pycuda ||
            echo "gpu-suite: pycuda did not install (put its sdist and wheels in GPU_SUITE_WHEELS); its tests will skip"
    fi
fi
