#!/usr/bin/env bash
# The install paths a user takes, checked outside tox's packaging env and this
# machine's global site-packages: each venv has nothing but pip, and pip runs
# with its default options (build isolation on). Every check prints one line.
#
#   ci/install-checks.sh            # all checks, on a clone of HEAD
#
# Reduced architecture lists (AOTC_CHECK_ARCHS, default 80) keep this to a few
# minutes; tox builds the full matrix once. Needs git, python3 and nvcc.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
work=$(mktemp -d "${TMPDIR:-/tmp}/aotc-install-checks.XXXXXX")
trap 'rm -rf "$work"' EXIT
# set -e ends the script at any failing command; say where, so CI's log shows it.
trap 'echo "install-check: FAILED: line $LINENO: $BASH_COMMAND" >&2' ERR
archs=${AOTC_CHECK_ARCHS:-80}
export PIP_DISABLE_PIP_VERSION_CHECK=1 SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-1700000000}
# The fatbin cache, shared by every clone here and by nothing else; nvcc's own flags unset.
export AOTC_BUILD_CACHE_DIR="$work/fatbin-cache"
unset AOTC_BUILD_CACHE NVCC_PREPEND_FLAGS NVCC_APPEND_FLAGS NVCC_CCBIN

say() { echo "install-check: $*"; }
fail() { echo "install-check: FAILED: $*" >&2; exit 1; }
# Kernels the last build compiled, from pip's verbose log: the compile steps
# ninja ran, less those the fatbin cache answered ("aotc: tropical: cached k").
steps() { grep -o 'aotc: tropical: compiling [a-z0-9_]*' "$1" | awk '{print $4}' | sort || true; }
cached() { grep -o 'aotc: tropical: cached [a-z0-9_]*' "$1" | awk '{print $4}' | sort || true; }
compiled() { comm -23 <(steps "$1") <(cached "$1"); }

git clone --quiet "$repo" "$work/clone"
python3 -m venv "$work/venv"
py="$work/venv/bin/python"

# 1. The README's first command, in a venv with nothing but pip.
start=$SECONDS
( cd "$work/clone" && AOTC_ARCHS=$archs "$py" -m pip install -v . >"$work/install.log" 2>&1 ) ||
  { tail -40 "$work/install.log"; fail "pip install . in a fresh venv"; }
cold_s=$((SECONDS - start))
n=$(compiled "$work/install.log" | wc -l)
# Every kernel of the manifest, as the installed aotc counts them ("library tropical: N kernels").
want=$("$work/venv/bin/aotc" list "$work/clone/kernels/manifest.yaml" | awk 'NR == 1 {print $3}')
[ "$n" -gt 0 ] && [ "$n" -eq "$want" ] || fail "a first build compiled $n kernels, expected the manifest's $want"
grep -q "aotc: compiler: nvcc" "$work/install.log" || fail "the build log does not name its nvcc"
# pip's build environment keeps a sitecustomize that aotc's build steps must not trip.
if grep -q "Error in sitecustomize" "$work/install.log"; then fail "the build log holds 'Error in sitecustomize'"; fi
"$work/venv/bin/aotc" inspect tropical >"$work/inspect.log" || { cat "$work/inspect.log"; fail "aotc inspect after install"; }
say "fresh venv: pip install . built and installed $n kernels ($(grep -m1 -o 'aotc: compiler: .*' "$work/install.log"))"

# 2. The same command again: nothing changed, nothing compiles.
( cd "$work/clone" && AOTC_ARCHS=$archs "$py" -m pip install -v . >"$work/noop.log" 2>&1 ) || fail "pip rebuild"
n=$(compiled "$work/noop.log" | wc -l)
[ "$n" -eq 0 ] || fail "a pip rebuild with nothing changed compiled $n kernels"
say "no-op pip rebuild compiled 0 kernels"

# 2b. Editing the runtime or the tropical API reruns no codegen and compiles nothing:
# the generator depends on exactly the build-time modules it imports.
echo "# edited by install-checks" >>"$work/clone/aotc/tropical/__init__.py"
echo "# edited by install-checks" >>"$work/clone/aotc/runtime/library.py"
( cd "$work/clone" && AOTC_ARCHS=$archs "$py" -m pip install -v . >"$work/api-edit.log" 2>&1 ) || fail "pip rebuild after a runtime edit"
n=$(compiled "$work/api-edit.log" | wc -l)
[ "$n" -eq 0 ] || fail "editing aotc/tropical and aotc/runtime compiled $n kernels"
if grep -q "aotc: tropical: generating" "$work/api-edit.log"; then fail "editing aotc/tropical reran codegen"; fi
git -C "$work/clone" checkout --quiet -- aotc/tropical aotc/runtime
say "editing aotc/tropical/__init__.py and aotc/runtime/library.py reran no codegen and compiled 0 kernels"

# 3. One template edit: exactly the kernels rendered from it recompile.
echo "// edited by install-checks" >>"$work/clone/aotc/build/templates/tropical/gemm/backward.cuh.j2"
( cd "$work/clone" && AOTC_ARCHS=$archs "$py" -m pip install -v . >"$work/edit.log" 2>&1 ) || fail "pip rebuild after an edit"
n=$(compiled "$work/edit.log" | wc -l)
others=$(compiled "$work/edit.log" | grep -vc backward || true)
[ "$n" -eq 24 ] && [ "$others" -eq 0 ] || fail "editing backward.cuh.j2 compiled $n kernels ($others not backward), expected its 24"
say "one-template edit recompiled exactly its 24 backward kernels"
git -C "$work/clone" checkout --quiet -- aotc/build/templates

# 4. Byte-reproducible: a second clone, built later in another folder, gives the same wheel.
( cd "$work/clone" && AOTC_ARCHS=$archs "$py" -m pip wheel --no-deps -w "$work/wheels" . >"$work/wheel1.log" 2>&1 ) || fail "pip wheel"
# The second clone compiles nothing: the first filled the fatbin cache.
git clone --quiet "$repo" "$work/clone2"
start=$SECONDS
( cd "$work/clone2" && AOTC_ARCHS=$archs "$py" -m pip wheel -v --no-deps -w "$work/wheels2" . >"$work/wheel2.log" 2>&1 ) || fail "pip wheel in a second clone"
warm_s=$((SECONDS - start))
a=$(sha256sum "$work"/wheels/aotc-*.whl | cut -d' ' -f1)
b=$(sha256sum "$work"/wheels2/aotc-*.whl | cut -d' ' -f1)
[ "$a" = "$b" ] || fail "two builds of one commit differ: $a vs $b"
say "two clones built byte-identical wheels (sha256 ${a:0:16}...)"
n=$(compiled "$work/wheel2.log" | wc -l); hits=$(cached "$work/wheel2.log" | wc -l)
[ "$n" -eq 0 ] && [ "$hits" -eq "$want" ] || fail "a new clone after a full build compiled $n kernels and hit $hits, expected 0 and $want"
say "fatbin cache: a new clone compiled 0 kernels, $hits from the cache (${warm_s} s; the first clone's cold install took ${cold_s} s)"

# Each real change misses the fatbin cache, in a fresh build directory as a new
# clone has, and recompiles exactly the kernels it changes.
miss() {  # miss <what> <expected compiled> <expected cached> [env...]
  local what=$1 want_n=$2 want_hits=$3 log="$work/miss-${1// /-}.log"; shift 3
  rm -rf "$work/clone2/build"
  ( cd "$work/clone2" && env AOTC_ARCHS=$archs "$@" "$py" -m pip wheel -v --no-deps -w "$work/wheels-miss" . >"$log" 2>&1 ) ||
    { tail -30 "$log"; fail "pip wheel with $what"; }
  local n hits
  n=$(compiled "$log" | wc -l); hits=$(cached "$log" | wc -l)
  [ "$n" -eq "$want_n" ] && [ "$hits" -eq "$want_hits" ] || fail "$what: compiled $n kernels and hit $hits, expected $want_n and $want_hits"
  say "fatbin cache: $what: compiled $n kernels, $hits from the cache"
}
miss "another compression mode" "$want" 0 AOTC_FATBIN_COMPRESSION=default
miss "another arch list" "$want" 0 AOTC_ARCHS=86
miss "NVCC_APPEND_FLAGS set" "$want" 0 NVCC_APPEND_FLAGS=-DAOTC_INSTALL_CHECK=1
mkdir -p "$work/stub"
printf '#!/bin/sh\nif [ "$1" = --version ]; then "%s" --version | sed "s/^Built on/Built (a stub) on/"; exit 0; fi\nexec "%s" "$@"\n' \
  "$(command -v nvcc)" "$(command -v nvcc)" >"$work/stub/nvcc"
chmod +x "$work/stub/nvcc"
miss "another nvcc (a stub that changes its version text)" "$want" 0 PATH="$work/stub:$PATH"
# Another edit than step 3's, whose kernels the cache already holds.
echo "// edited again by install-checks, in the second clone" >>"$work/clone2/aotc/build/templates/tropical/gemm/backward.cuh.j2"
miss "an edited template (backward.cuh.j2)" 24 $((want - 24))
others=$(compiled "$work/miss-an-edited-template-(backward.cuh.j2).log" | grep -vc backward || true)
[ "$others" -eq 0 ] || fail "the template edit recompiled $others kernels that are not backward kernels"
git -C "$work/clone2" checkout --quiet -- aotc/build/templates
rm -rf "$work/clone2/build"
"$py" -m pip install --quiet twine check-wheel-contents >/dev/null 2>&1 || fail "pip install twine check-wheel-contents"
"$work/venv/bin/twine" check --strict "$work"/wheels/aotc-*.whl >"$work/twine.log" 2>&1 || { cat "$work/twine.log"; fail "twine check"; }
"$work/venv/bin/check-wheel-contents" "$work"/wheels/aotc-*.whl >"$work/cwc.log" 2>&1 || { cat "$work/cwc.log"; fail "check-wheel-contents"; }
say "twine check --strict and check-wheel-contents pass on $(basename "$work"/wheels/aotc-*.whl)"

# 5. No nvcc anywhere: the build takes NVRTC and nvFatbin from PyPI.
no_nvcc_path=$(echo "$PATH" | tr ':' '\n' | while read -r d; do [ -x "$d/nvcc" ] || echo "$d"; done | paste -sd: -)
( cd "$work/clone2" && rm -rf build && env -u CUDACXX -u CUDA_HOME -u CUDA_PATH -u AOTC_NVCC PATH="$no_nvcc_path" \
    AOTC_ARCHS=$archs "$py" -m pip wheel -v --no-deps -w "$work/wheels-nvrtc" . >"$work/nvrtc.log" 2>&1 ) ||
  { tail -40 "$work/nvrtc.log"; fail "pip wheel without nvcc on PATH"; }
grep -q "aotc: compiler: NVRTC" "$work/nvrtc.log" || fail "the nvcc-less build did not say it used NVRTC"
say "without nvcc: $(grep -m1 -o 'aotc: compiler: .*' "$work/nvrtc.log")"

# 6. The CUDA 12 lane: an aotc-cuda12x wheel with sm_70 SASS.
( cd "$work/clone2" && rm -rf build && AOTC_CUDA=12 AOTC_ARCHS=70 "$py" -m pip wheel -v --no-deps -w "$work/wheels-cu12" . \
    >"$work/cu12.log" 2>&1 ) || { tail -40 "$work/cu12.log"; fail "the CUDA 12 lane's wheel"; }
cu12=$(ls "$work"/wheels-cu12/aotc_cuda12x-*.whl) || fail "the CUDA 12 lane's wheel is not named aotc_cuda12x"
"$py" -m pip install --quiet nvidia-cuda-cuobjdump >/dev/null 2>&1 || fail "pip install nvidia-cuda-cuobjdump"
mkdir "$work/cu12" && (cd "$work/cu12" && "$py" -m zipfile -e "$cu12" .)
cuobjdump=$("$py" -c "import glob, sysconfig; print(glob.glob(sysconfig.get_paths()['purelib'] + '/nvidia/**/bin/cuobjdump', recursive=True)[0])")
"$cuobjdump" --list-elf "$work/cu12/aotc/_lib/tropical/gemm_maxplus_f32_forward.fatbin" | grep -q "sm_70" ||
  fail "no sm_70 SASS in the CUDA 12 lane's fatbin"
grep -q "^Requires-Dist: cuda-bindings>=12" "$work"/cu12/aotc_cuda12x-*.dist-info/METADATA || fail "the CUDA 12 wheel does not pin cuda-bindings 12"
"$work/venv/bin/twine" check --strict "$cu12" >/dev/null 2>&1 && "$work/venv/bin/check-wheel-contents" "$cu12" >/dev/null 2>&1 ||
  fail "twine check or check-wheel-contents on the CUDA 12 wheel"
say "CUDA 12 lane: $(basename "$cu12") holds sm_70 SASS, pins cuda-bindings 12, and passes twine and check-wheel-contents"

# 7. A downstream project: its own manifest, find_package(aotc), aotc as a build requirement.
cp -r "$work/clone/examples/downstream" "$work/downstream"
( cd "$work/downstream" && "$py" -m pip install --find-links "$work/wheels" . >"$work/downstream.log" 2>&1 ) ||
  { tail -40 "$work/downstream.log"; fail "pip install examples/downstream"; }
"$py" -m pip install --quiet numpy >/dev/null 2>&1 || fail "pip install numpy"
# -P: import the installed bottleneck package, not the source folder beside check.py.
AOTC_BACKEND=emulator AOTC_CACHE_DIR="$work/cache" "$py" -P "$work/downstream/check.py" || fail "the downstream kernels on the emulator"
# Found by its name, through the aotc.libraries entry point its pyproject.toml declares.
"$work/venv/bin/aotc" inspect bottleneck >"$work/inspect-bottleneck.log" 2>&1 || { cat "$work/inspect-bottleneck.log"; fail "aotc inspect bottleneck"; }
say "downstream project built against the aotc wheel, ran on the emulator, and is found by name"

# 8. The docs as written (ci/doc_blocks.py): the README's code blocks in a fresh clone
#    and venv, its Python blocks under the emulator and again without a backend
#    (each must end in NoDeviceError's line here); then the rowops tutorial from an
#    empty folder: aotc's wheel, the package's files as the page shows them, its
#    build, its calls, tests/check.py, and a wheel that passes twine check --strict;
#    then examples/warpnorm's README the same way (its package installed from a copy).
for doc in README.md examples/rowops/README.md examples/warpnorm/README.md; do
  flags=(--pip torch==2.13.0 jax==0.10.2 jaxlib==0.10.2)
  [ "$doc" = README.md ] && flags+=(--clone --no-gpu-too)
  log="$work/docs-${doc//\//-}.log"
  AOTC_ARCHS=$archs AOTC_CACHE_DIR="$work/cache" python3 "$work/clone/ci/doc_blocks.py" run "$doc" "${flags[@]}" >"$log" 2>&1 ||
    { tail -60 "$log"; fail "the code blocks of $doc"; }
  say "$(tail -1 "$log")"
done

# 9. A contributor's install: `pip install -e .` in a fresh venv imports the source
#    tree, while the build installs the libraries into site-packages; aotc finds
#    them on its package path, by name.
git clone --quiet "$repo" "$work/editable"
python3 -m venv "$work/venv-editable"
( cd "$work/editable" && AOTC_ARCHS=$archs "$work/venv-editable/bin/python" -m pip install -e . numpy >"$work/editable.log" 2>&1 ) ||
  { tail -40 "$work/editable.log"; fail "pip install -e . in a fresh venv"; }
( cd "$work" && AOTC_BACKEND=emulator AOTC_CACHE_DIR="$work/cache" "$work/venv-editable/bin/python" -c "
import aotc, numpy as np
from aotc import reference, tropical
assert aotc.__file__.startswith('$work/editable/'), aotc.__file__
a, b = np.random.rand(5, 3).astype(np.float32), np.random.rand(3, 4).astype(np.float32)
assert np.allclose(tropical.matmul(a, b), reference.matmul(a, b, 'maxplus'))
print(aotc.library_dir('tropical'))" >"$work/editable-run.log" 2>&1 ) || { cat "$work/editable-run.log"; fail "tropical.matmul after pip install -e ."; }
say "editable install: aotc imported from the clone, tropical found at $(tail -1 "$work/editable-run.log")"
