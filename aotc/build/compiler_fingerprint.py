"""What a compiler's output depends on: the fatbin cache's compiler key.

Computed once per configure (``python -m aotc.build.toolchain``) and written
to ``<build>/aotc-tools/compiler-fingerprint.txt``. Every fatbin depends on
it (``compiler-identity.txt`` carries its digest), and the fatbin cache
(``aotc.build.fatbin_cache``) keys every entry on its text. It holds digests,
never paths, so two machines with the same toolkit share entries:

- nvcc: ``nvcc --version``'s text and the digest of the nvcc that was found
  (a wrapper script too), then the digests of the toolkit's own programs
  (nvcc, cudafe++, cicc, ptxas, fatbinary, nvcc.profile, libdevice) in the
  directory nvcc's ``-dryrun`` names (``_HERE_``), the host compiler's version
  text and digest, and ``NVCC_PREPEND_FLAGS`` / ``NVCC_APPEND_FLAGS`` /
  ``NVCC_CCBIN``.
- NVRTC: the digests of libnvrtc, its builtins library and libnvFatbin.

The implicit headers' effect is per architecture and is taken at compile time,
once per build directory (``headers_digest``).

Hashing cicc (75 MB) on every configure would add half a second to a no-op
pip rebuild, so a file's digest is remembered by its (size, mtime, ctime,
inode) in ``digests.json`` beside the fingerprint. Standard library only.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from aotc.build._files import write_if_changed

__all__ = [
    "ENV_FLAGS",
    "Toolkit",
    "env_flags",
    "headers_digest",
    "nvcc_fingerprint",
    "nvrtc_fingerprint",
    "toolkit_of",
]

# Environment variables nvcc itself reads: each can change every fatbin.
ENV_FLAGS = ("NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS", "NVCC_CCBIN")
_TIMEOUT_S = 120


@dataclass(frozen=True)
class Toolkit:
    """Where the toolkit behind an nvcc really is, as ``nvcc -dryrun`` says."""

    bin_dir: str  # _HERE_: the folder of the toolkit's own nvcc, ptxas, fatbinary
    cicc_dir: str
    libdevice_dir: str
    host_compiler: str  # resolved path of the compiler nvcc runs for preprocessing, or its name


def env_flags() -> list[str]:
    """``NAME=value`` for each of nvcc's environment variables, set or not."""
    return [f"{name}={os.environ.get(name, '')}" for name in ENV_FLAGS]


def _run(command: list[str], cwd: str | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, capture_output=True, text=True, timeout=_TIMEOUT_S, check=False, cwd=cwd)


def toolkit_of(nvcc: str) -> Toolkit | None:
    """The toolkit that ``nvcc`` (maybe a wrapper script) runs, from its ``-dryrun``; None if it says nothing."""
    with tempfile.TemporaryDirectory(prefix="aotc-dryrun-") as folder:
        Path(folder, "aotc-empty.cu").write_bytes(b"")
        try:
            result = _run([nvcc, "-dryrun", "-ptx", "aotc-empty.cu"], cwd=folder)
        except (OSError, subprocess.TimeoutExpired):
            return None
    values: dict[str, str] = {}
    host = ""
    for line in (result.stderr + result.stdout).splitlines():
        if not line.startswith("#$ "):
            continue
        text = line[3:].strip()
        name, eq, value = text.partition("=")
        if eq and name.replace("_", "").isalnum() and " " not in name:
            values[name] = value
        elif not host and " -E " in f" {text} ":
            host = shlex.split(text)[0]  # the first preprocessing call is the host compiler's
    here = values.get("_HERE_", "")
    if not here or not Path(here, "ptxas").is_file():
        return None
    top = values.get("TOP", str(Path(here).parent))
    cicc = values.get("CICC_PATH", str(Path(top) / "nvvm" / "bin")).replace("$TOP", top)
    libdevice = values.get("NVVMIR_LIBRARY_DIR", str(Path(top) / "nvvm" / "libdevice")).replace("$TOP", top)
    resolved = shutil.which(host, path=values.get("PATH") or None) if host else None
    return Toolkit(str(Path(here).resolve()), str(Path(cicc).resolve()), str(Path(libdevice).resolve()), resolved or host)


class _Digests:
    """sha256 of files, remembered by (size, mtime, ctime, inode) in one JSON file."""

    def __init__(self, memo: Path | None) -> None:
        self.memo = memo
        self.known: dict[str, list] = {}
        if memo is not None:
            try:
                loaded = json.loads(memo.read_text())
                self.known = loaded if isinstance(loaded, dict) else {}
            except (OSError, ValueError):
                self.known = {}

    def of(self, path: str | Path) -> str:
        real = os.path.realpath(path)
        try:
            st = os.stat(real)
        except OSError:
            return "missing"
        stamp = [st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino]
        known = self.known.get(real)
        if isinstance(known, list) and known[:4] == stamp and len(known) == 5:
            return str(known[4])
        hasher = hashlib.sha256()
        try:
            with open(real, "rb") as file:
                while chunk := file.read(1 << 20):
                    hasher.update(chunk)
        except OSError:
            return "unreadable"
        self.known[real] = [*stamp, hasher.hexdigest()]
        return hasher.hexdigest()

    def save(self) -> None:
        if self.memo is not None:
            write_if_changed(self.memo, (json.dumps(self.known, indent=0, sort_keys=True) + "\n").encode())


def nvcc_fingerprint(nvcc: str, memo: Path | None = None) -> tuple[str, Toolkit | None]:
    """The fingerprint text of ``nvcc``, and its toolkit (None where ``-dryrun`` names none)."""
    digests = _Digests(memo)
    try:
        version = _run([nvcc, "--version"]).stdout
    except (OSError, subprocess.TimeoutExpired):
        version = ""
    lines = ["kind nvcc", f"nvcc-as-found {digests.of(shutil.which(nvcc) or nvcc)}"]
    lines += [f"version {line.rstrip()}" for line in version.splitlines() if line.strip()]
    toolkit = toolkit_of(nvcc)
    if toolkit is None:
        lines.append("toolkit unknown")
    else:
        for name in ("nvcc", "nvcc.profile", "cudafe++", "ptxas", "fatbinary"):
            lines.append(f"{name} {digests.of(Path(toolkit.bin_dir) / name)}")
        lines.append(f"cicc {digests.of(Path(toolkit.cicc_dir) / 'cicc')}")
        for bitcode in sorted(Path(toolkit.libdevice_dir).glob("*.bc")):
            lines.append(f"libdevice/{bitcode.name} {digests.of(bitcode)}")
        host = toolkit.host_compiler
        if host:
            try:
                host_version = _run([host, "--version"]).stdout.splitlines()[:1]
            except (OSError, subprocess.TimeoutExpired, IndexError):
                host_version = []
            lines.append(f"host {Path(host).name} {digests.of(host) if os.path.isabs(host) else 'not found'}")
            lines += [f"host-version {line}" for line in host_version]
    lines += [f"env {flag}" for flag in env_flags()]
    digests.save()
    return "\n".join(lines) + "\n", toolkit


def nvrtc_fingerprint(cuda: str, memo: Path | None = None) -> str:
    """The fingerprint text of NVRTC and nvFatbin of CUDA ``cuda``, as a compile step will load them."""
    from aotc.build._nvrtc_libs import find_library

    digests = _Digests(memo)
    lines = ["kind nvrtc", f"cuda {cuda}"]
    for kind in ("nvrtc", "nvfatbin"):
        path, _ = find_library(kind, int(cuda))
        lines.append(f"lib{kind} {digests.of(path)}")
        if kind == "nvrtc":
            for builtins in sorted(Path(path).resolve().parent.glob("libnvrtc-builtins*.so*")):
                lines.append(f"{builtins.name} {digests.of(builtins)}")
    digests.save()
    return "\n".join(lines) + "\n"


def headers_digest(nvcc: str, arch: str, memo_dir: Path | None) -> str | None:
    """sha256 of nvcc's preprocessed output of an empty ``.cu`` for ``compute_<arch>``: what
    the implicit headers (cuda_runtime.h and the host's) put in every kernel. None if nvcc fails.

    Remembered per build directory in ``memo_dir``, whose name the caller ties
    to the compiler's fingerprint and nvcc's environment flags.
    """
    memo = memo_dir / f"compute_{arch}.sha256" if memo_dir is not None else None
    if memo is not None:
        try:
            known = memo.read_text().strip()
            if len(known) == 64:
                return known
        except OSError:
            pass
    with tempfile.TemporaryDirectory(prefix="aotc-headers-") as folder:
        Path(folder, "aotc-empty.cu").write_bytes(b"")
        # -P: no line markers, so the toolkit's install path is not in the digest.
        command = [nvcc, "-E", "-Xcompiler", "-P", f"-arch=compute_{arch}", "aotc-empty.cu", "-o", "empty.ii"]
        try:
            if _run(command, cwd=folder).returncode != 0:
                return None
            digest = hashlib.sha256(Path(folder, "empty.ii").read_bytes()).hexdigest()
        except (OSError, subprocess.TimeoutExpired):
            return None
    if memo is not None:
        try:
            memo_dir.mkdir(parents=True, exist_ok=True)
            write_if_changed(memo, (digest + "\n").encode())
        except OSError:
            pass
    return digest
