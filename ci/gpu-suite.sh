#!/usr/bin/env bash
# The GPU suite, for any machine with an NVIDIA GPU and nvcc on PATH, in one run
# of at most 8 minutes (each part has a timeout, and no part starts past the
# whole run's deadline), so that a rerun fits a 15-minute lease:
#   1. builds and installs aotc for the GPU's own architecture (ci/gpu-install.sh),
#   2. runs every test marked `gpu` (every kernel against the NumPy reference,
#      through both real backends), among them what a real node does that the
#      fakes only model (tests/runtime/test_gpu_contexts.py): launches on
#      non-default streams (a driver stream, a pycuda Stream, a torch side
#      stream, a CuPy stream), CUDA-graph capture, contexts made current by
#      other code and a second GPU's, and a kernel's fault reported naming its
#      launch; tall products and batches past CUDA's 65535 blocks on y and z,
#      launched in parts (tests/tropical/test_grid_split_gpu.py); and the
#      declared families of examples/rowops, built for this
#      GPU and called with CUDA tensors (with and without softmax's optional
#      batch), CuPy and staged NumPy arrays, and a family with declared strides
#      reading CUDA views and broadcasts in place; examples/warpnorm (one
#      warp a row, shuffles) in f32, f16 and bf16 against its references, and
#      half arithmetic with defined rounding and the float-to-integer
#      intrinsics on their boundaries (saturation, NaN to 0, each rounding)
#      bit for bit against the emulator (tests/kernels/test_family_gpu.py); the torch, CuPy and two-GPU cases
#      skip, saying why, where PyTorch with CUDA, CuPy or a second GPU is missing;
#      and JAX arrays through the buffer_callback route on XLA's stream, under
#      jit, grad and vmap (tests/tropical/test_jax_gpu.py, and rowops' softmax
#      in tests/kernels/test_family_gpu.py), and rowops' softmax through
#      jaxlib's built-in launcher too, also inside XLA's command buffers (CUDA
#      graphs), where jax with its CUDA plugin is installed (else it skips,
#      saying so; the launcher needs the plugin at 0.11.1 or newer),
#   3. with the peer's source (AOTC_PEER_CU, below): times aotc's GEMM kernels
#      beside the peer's at 4096^3 and a ragged shape, plain and exact inputs,
#      each pair checked against the reference first
#      (benchmarks/gemm_side_by_side.py); without it, times aotc's forward and
#      argmax kernels alone at 4096^3 (benchmarks/gemm_gpu.py),
#   4. with the peer's source and Nsight Compute: one ncu pass per kernel class
#      at 2048^3 (benchmarks/gemm_profile.py; no GPU setting is changed).
# Parts 3 and 4 are skipped with --no-timings.
#
# Environment:
#   OUT               where the tables and logs go (default: a new temporary folder)
#   AOTC_PEER_CU      a copy of the peer's tropical_gemm.cu (TensorBFS/tropical-gemm,
#                     MIT); never commit it: keep it in an untracked folder
#   GPU_SUITE_WHEELS  a folder of wheels and sdists (scikit-build-core, pycuda's
#                     sdist) for a node with no package index
#   GPU_SUITE_PYCUDA  0: do not build pycuda (a minute or two from its sdist);
#                     its tests then skip, saying so
# Record what it prints in benchmarks/RESULTS.md.
set -uo pipefail
cd "$(dirname "$0")/.."
repo=$(pwd)
OUT=${OUT:-$(mktemp -d -t gpu-suite.XXXXXX)}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1
deadline=$((SECONDS + ${GPU_SUITE_SECONDS:-470}))
status=0
say() { echo "== gpu-suite, ${SECONDS} s: $*"; }
# A part's time: its own cap, or what is left before the deadline if less.
budget() { local left=$((deadline - SECONDS)); echo $(($1 < left ? $1 : left)); }
part() {  # part NAME CAP_SECONDS COMMAND...: runs it under its timeout, logged to $OUT/NAME.log
    local name=$1 cap
    cap=$(budget "$2")
    shift 2
    if ((cap < 10)); then
        say "$name: skipped, the run's ${GPU_SUITE_SECONDS:-470} s are spent"
        status=1
        return
    fi
    say "$name (at most ${cap} s)"
    timeout --kill-after=10 "$cap" "$@" 2>&1 | tee "$OUT/$name.log"
    local rc=${PIPESTATUS[0]}
    if ((rc == 124 || rc == 137)); then say "$name: stopped at its timeout (${cap} s)"; fi
    if ((rc != 0)); then status=1; fi
}

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw,temperature.gpu --format=csv | tee "$OUT/gpu.txt"
arch=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n 1 | tr -d '. ')
say "building for sm_${arch}; tables and logs go to $OUT"
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
part install 240 bash ci/gpu-install.sh "${arch}"
aotc doctor >"$OUT/doctor.txt" 2>&1 || true
tail -n 3 "$OUT/doctor.txt"

# The tests must import the installed aotc, not the checkout's (which holds no
# fatbins): `python -m` would put the checkout first on sys.path, so
# PYTHONSAFEPATH keeps it off (Python 3.11+), and AOTC_TEST_LIBRARY names the
# installed library for an older Python. A missing library then fails, never skips.
installed=$(cd / && python -c 'import aotc; print(aotc.library_dir("tropical"))')
part gpu-tests 200 env PYTHONSAFEPATH=1 AOTC_TEST_LIBRARY="${installed}" AOTC_REQUIRE_INSTALLED=1 \
    python -m pytest -m gpu -ra -p no:cacheprovider

# The timings run even where a test failed: both are worth recording.
if [[ "${1:-}" == "--no-timings" ]]; then
    say "timings and profiles skipped (--no-timings)"
elif [[ -z "${AOTC_PEER_CU:-}" ]]; then
    say "no AOTC_PEER_CU: aotc timed alone (no side by side, no profiles)"
    part gemm-timings 150 env -C / python "${repo}/benchmarks/gemm_gpu.py" --shape "${AOTC_BENCH_SHAPE:-4096}"
else
    # Rendered from this checkout and compiled here, outside $OUT; the build
    # folder is shared with the profiles, which then compile nothing.
    build="${TMPDIR:-/tmp}/aotc-gpu-suite-build"
    part side-by-side 210 python benchmarks/gemm_side_by_side.py --arch "${arch}" --repeats 10 --budget 0.3 \
        --build-dir "$build" --out "$OUT"
    nvidia-smi --query-gpu=clocks.sm,power.draw,temperature.gpu --format=csv,noheader >>"$OUT/gpu.txt" 2>&1
    # Each pass has 25 s; what is left of the run bounds them all.
    part profiles 190 python benchmarks/gemm_profile.py --timeout 25 --build-dir "$build" --out "$OUT"
    (cd "$OUT" && tar czf ncu_logs.tgz ncu_*.csv ncu_*.err 2>/dev/null && rm -f ncu_*.csv ncu_*.err)
fi
say "done, status ${status}; tables and logs in $OUT"
exit "${status}"
