"""A fake nvcc for the fatbin cache's tests: it logs every call, and its output
depends on exactly what a real nvcc's would (the source, the arguments, the
headers it was told to preprocess), so a wrong hit shows as wrong bytes."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["REPO_ROOT", "FakeToolchain"]

REPO_ROOT = Path(__file__).resolve().parents[1]

_SCRIPT = """#!/bin/sh
echo "$*" >> "{log}"
out=""; prev=""; src=""
for a in "$@"; do [ "$prev" = "-o" ] && out="$a"; prev="$a"; src="$a"; done
case " $* " in
  *" --version "*) echo "Cuda compilation tools, release 13.0, V13.0.88 ${{FAKE_NVCC_TAG:-}}"; exit 0;;
  *" -E "*) echo "headers ${{FAKE_HEADERS:-}} $*" > "$out"; exit 0;;
esac
[ -n "${{FAKE_NVCC_SLEEP:-}}" ] && sleep "$FAKE_NVCC_SLEEP"
[ -n "${{FAKE_NVCC_FAIL:-}}" ] && {{ echo "error: fake failure" >&2; exit 2; }}
{{ echo "fatbin of"; cat "$src"; echo "$*"; }} > "$out"
echo "ptxas info    : Used 42 registers ($*)" >&2
"""
# The per-architecture path's other programs, found beside nvcc.
_PTXAS = """#!/bin/sh
out=""; prev=""
for a in "$@"; do [ "$prev" = "-o" ] && out="$a"; prev="$a"; done
echo "cubin $*" > "$out"
echo "ptxas info    : Used 42 registers" >&2
"""
_FATBINARY = """#!/bin/sh
for a in "$@"; do case "$a" in --create=*) out="${a#--create=}";; esac; done
echo "fatbinary $*" > "$out"
"""


@dataclass
class FakeToolchain:
    """A fake nvcc, its fingerprint file and a kernel source, in ``root``."""

    root: Path
    fingerprint: str = "kind nvcc\nfake 1\n"
    env: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.log = self.root / "nvcc-calls.txt"
        self.nvcc = self.root / "bin" / "nvcc"
        self.nvcc.parent.mkdir(parents=True, exist_ok=True)
        for path, text in ((self.nvcc, _SCRIPT.format(log=self.log)), (self.nvcc.parent / "ptxas", _PTXAS)):
            path.write_text(text)
            path.chmod(path.stat().st_mode | stat.S_IXUSR)
        fatbinary = self.nvcc.parent / "fatbinary"
        fatbinary.write_text(_FATBINARY)
        fatbinary.chmod(fatbinary.stat().st_mode | stat.S_IXUSR)
        self.tools = self.root / "aotc-tools"
        self.tools.mkdir(exist_ok=True)
        self.set_fingerprint(self.fingerprint)
        self.env.update(
            AOTC_TOOLCHAIN_KIND="nvcc",
            AOTC_TOOLCHAIN_NVCC=str(self.nvcc),
            AOTC_TOOLCHAIN_FINGERPRINT=str(self.tools / "compiler-fingerprint.txt"),
            AOTC_COMPILER_LAUNCHER="",
        )

    def set_fingerprint(self, text: str) -> None:
        (self.tools / "compiler-fingerprint.txt").write_text(text)

    def build_dir(self, name: str, source: bytes = b"__global__ void k() {}\n") -> Path:
        """A build directory holding ``tropical/gen/k.cu``."""
        folder = self.root / name
        (folder / "tropical" / "gen").mkdir(parents=True, exist_ok=True)
        (folder / "tropical" / "fatbin").mkdir(exist_ok=True)
        (folder / "tropical" / "gen" / "k.cu").write_bytes(source)
        return folder

    def compiles(self) -> int:
        """How many real compiles the fake nvcc has run: ``-fatbin`` calls, or
        sets of ``-ptx`` calls (one per architecture) on the launcher's path."""
        if not self.log.exists():
            return 0
        lines = self.log.read_text().splitlines()
        return sum(line.startswith("-fatbin") for line in lines) + sum(line.startswith("-ptx -arch=compute_80") for line in lines)

    def argv(self, *extra: str) -> list[str]:
        return [
            "--library=tropical", "--sass=80,90", "--ptx=90", "--out=tropical/fatbin/k.fatbin",
            "--resources=tropical/gen/k.resources.txt", *extra, "tropical/gen/k.cu",
        ]  # fmt: skip

    def run(self, folder: Path, *extra: str, env: dict[str, str] | None = None, **popen: object) -> subprocess.Popen:
        """``python -m aotc.build.compile`` in ``folder``, as the build's wrapper runs it."""
        path = os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))
        full = {**os.environ, **self.env, "PYTHONPATH": path, **(env or {})}
        command = [sys.executable, "-m", "aotc.build.compile", *self.argv(*extra)]
        return subprocess.Popen(command, cwd=folder, env=full, stdout=subprocess.PIPE, stderr=subprocess.PIPE, **popen)

    def compile(self, folder: Path, *extra: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
        """Run one compile step to its end: (exit status, stdout, stderr)."""
        child = self.run(folder, *extra, env=env)
        out, err = child.communicate(timeout=120)
        return child.returncode, out.decode(), err.decode()
