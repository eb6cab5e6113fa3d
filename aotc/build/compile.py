"""One kernel's compile step: a generated ``.cu`` in, its fatbin and ptxas report out.

The build runs this once per kernel, through the wrapper script that the
configure step writes (``<build>/aotc-tools/aotc-compile``). The command line
names only build-relative files and the architecture lists, so it is the same
in every pip build environment; which compiler runs, and through which
launcher (ccache, sccache), comes from the wrapper's environment:

- ``AOTC_TOOLCHAIN_KIND``: ``nvcc`` or ``nvrtc``
- ``AOTC_TOOLCHAIN_NVCC``: nvcc's path (``nvcc`` only)
- ``AOTC_TOOLCHAIN_CUDA``: the CUDA major, for NVRTC's libraries
- ``AOTC_COMPILER_LAUNCHER``: a compiler launcher, ``;``-separated, or empty
- ``AOTC_TOOLKIT_BIN``: the toolkit's own bin folder (``nvcc -dryrun``'s
  ``_HERE_``), where ptxas and fatbinary are taken from
- ``AOTC_TOOLCHAIN_FINGERPRINT``: the compiler's fingerprint file, the fatbin
  cache's compiler key (``aotc.build.compiler_fingerprint``)

Without a launcher, one ``nvcc -fatbin`` builds every architecture. With one
(sccache), nvcc's own steps run as separate calls, because sccache 0.16 fails
under concurrency on a multi-architecture ``-fatbin`` (its front-end step looks
for a ``.module_id`` file that is not there) and keys the front end on nvcc's
working directory:

1. ``nvcc -ptx`` per architecture, in a scratch folder named by the source's
   bytes (``_scratch``), so a new build directory or clone hits the cache;
2. ``ptxas`` per SASS architecture, from that PTX, with nvcc's options
   (``nvcc -cubin`` from the source would key the front end on a fresh module
   id and never hit);
3. the toolkit's ``fatbinary``, as nvcc calls it. The fatbin is byte-identical
   to the one ``nvcc -fatbin`` writes.

One cache entry per architecture also lets a build for fewer architectures
reuse a full build's entries.

Before any of this, the fatbin cache (``aotc.build.fatbin_cache``) is asked
for the whole step: a hit writes the fatbin and ptxas' report a compile would
have written, and prints ``aotc: <library>: cached <kernel>``. A compiler
cache is the second level, for the kernels the fatbin cache misses.

Imports only the standard library on the nvcc path: it runs for every kernel
of every build, so its start-up is paid a thousand times.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from aotc._cache import CacheKey

__all__ = ["compile_kernel", "fatbinary_command", "main", "nvcc_command", "ptx_command", "ptxas_command", "step_key"]

COMPRESS_MODES = ("size", "balance", "speed", "default", "none")


def _arch_list(text: str) -> list[str]:
    return [a for a in text.replace(";", ",").split(",") if a]


def nvcc_command(nvcc: str, source: str, out: str, sass: list[str], ptx: list[str], *, werror: bool, compress: str) -> list[str]:
    """nvcc's arguments for one fatbin: SASS per ``sass`` arch, PTX per ``ptx`` arch."""
    command = [nvcc, "-fatbin", "--resource-usage"]
    for arch in sass:
        code = f"[sm_{arch},compute_{arch}]" if arch in ptx else f"sm_{arch}"
        command.append(f"--generate-code=arch=compute_{arch},code={code}")
    for arch in ptx:
        if arch not in sass:
            command.append(f"--generate-code=arch=compute_{arch},code=compute_{arch}")
    if werror:
        command += ["-Werror", "all-warnings"]
    if compress == "none":
        command.append("--no-compress")
    elif compress != "default":
        command.append(f"--compress-mode={compress}")
    return [*command, "-o", out, source]


# nvcc's own fatbinary call records the float options cicc ran with; so does ours.
_CICC_CMDLINE = "--cicc-cmdline=-ftz=0 -prec_div=1 -prec_sqrt=1 -fmad=1 "


def ptx_command(nvcc: str, stem: str, arch: str, out: str, *, werror: bool) -> list[str]:
    """nvcc's front end for one architecture: ``<stem>.cu`` in the working directory to PTX."""
    warn = ["-Werror", "all-warnings"] if werror else []
    return [nvcc, "-ptx", f"-arch=compute_{arch}", *warn, "-o", out, f"{stem}.cu"]


def ptxas_command(ptxas: str, arch: str, ptx_file: str, cubin: str, *, werror: bool) -> list[str]:
    """ptxas as nvcc runs it for one SASS architecture (input before -o: sccache reads them in that order)."""
    warn = ["--warning-as-error"] if werror else []
    return [ptxas, *warn, f"-arch=sm_{arch}", "-m64", "-v", ptx_file, "-o", cubin]


def fatbinary_command(fatbinary: str, out: str, images: list[tuple[str, str, str]], *, compress: str) -> list[str]:
    """The toolkit's fatbinary bundling (kind, arch, file) images into ``out``, as nvcc calls it."""
    command = [fatbinary, f"--create={out}", "-64", _CICC_CMDLINE]
    if compress == "none":
        command.append("--compress=false")
    elif compress != "default":
        command.append(f"--compress-mode={compress}")
    return command + [f"--image3=kind={kind},sm={arch},file={file}" for kind, arch, file in images]


def _beside(nvcc: str, tool: str) -> str:
    """A toolkit program (ptxas, fatbinary): in the toolkit's own bin folder, else next to
    ``nvcc``, else the one on PATH. The own folder first, because an nvcc on PATH may be a
    wrapper script beside wrapper scripts, and sccache-dist cannot package a script."""
    toolkit = os.environ.get("AOTC_TOOLKIT_BIN", "")
    for folder in filter(None, (toolkit, str(Path(nvcc).parent))):
        candidate = Path(folder) / Path(nvcc).name.replace("nvcc", tool)
        if candidate.is_file():
            return str(candidate)
    return shutil.which(tool) or tool


def _run_nvcc(args: argparse.Namespace, sass: list[str], ptx: list[str]) -> int:
    nvcc = os.environ.get("AOTC_TOOLCHAIN_NVCC") or "nvcc"
    launcher = [part for part in os.environ.get("AOTC_COMPILER_LAUNCHER", "").split(";") if part]
    if not launcher:
        command = nvcc_command(nvcc, args.source, args.out, sass, ptx, werror=args.werror, compress=args.compress)
        result = subprocess.run(command, stderr=subprocess.PIPE, check=False)
        report, returncode = result.stderr, result.returncode
    else:
        report, returncode = _run_per_arch(args, nvcc, launcher, sass, ptx)
    # ptxas' report goes to stderr: keep it for the index.
    if args.resources:
        Path(args.resources).write_bytes(report)
    show_report(report, args.source, failed=bool(returncode))
    return returncode


_SIGNATURE_MISMATCH = re.compile(r'static assertion failed with "aotc: (family [^"\n]*)"')
# The signature check's decltype(&::<kernel>) where the template named its
# kernel otherwise: every parameter check after it fails too, saying nothing true.
_NO_KERNEL = re.compile(r'error: the global scope has no "(?P<symbol>\w+)"')


def show_report(report: bytes, source: str, *, failed: bool) -> None:
    """The compiler's report in the build log, as one block a person can act on:
    ptxas' resource report left out (the index keeps it), each diagnostic on the
    generated source led by its template's file and line (``aotc.build.line_map``),
    and after a failure one line saying so."""
    from aotc.build.line_map import explain

    text = report.decode(errors="replace")
    shown, errors = explain(text, source)
    sys.stderr.write(shown)
    if not failed:
        return
    # A kernel whose parameters are not its declared signature fails the
    # static_asserts codegen appends (aotc.build.signature.parameter_check):
    # the last line of the log says so in one line, whatever the compiler printed around it.
    missing = next((m["symbol"] for m in _NO_KERNEL.finditer(text) if m["symbol"] == Path(source).stem), None)
    if missing is not None:
        print(f"aotc: error: {source}: the template defines no kernel named {missing}: declare it extern \"C\" __global__ void {{{{ kernel_name }}}}(...)", file=sys.stderr)
        return
    mismatches = [match.group(1) for match in _SIGNATURE_MISMATCH.finditer(text)]
    for mismatch in mismatches:
        print(f"aotc: error: {source}: {mismatch}", file=sys.stderr)
    if not mismatches:
        count = f"{errors} error{'s' if errors != 1 else ''}" if errors else "errors"
        print(f"aotc: error: {source} did not compile: {count}, each above at its template's line", file=sys.stderr)


def _scratch(source: bytes, stem: str) -> Path:
    """A folder named by the source's bytes, holding ``<stem>.cu``: the front end's working directory.

    sccache hashes nvcc's working directory into the front end's key; running
    it here, not in the build directory, lets a new build directory or a new
    clone hit the cache.
    """
    root = Path(os.environ.get("AOTC_COMPILE_SCRATCH") or tempfile.gettempdir()) / "aotc-compile"
    folder = root / hashlib.sha256(source).hexdigest()[:24]
    folder.mkdir(parents=True, exist_ok=True)
    copy = folder / f"{stem}.cu"
    if not copy.is_file() or copy.read_bytes() != source:
        temp = folder / f".{stem}.{os.getpid()}.cu"
        temp.write_bytes(source)
        os.replace(temp, copy)
    return folder


def _run_per_arch(args: argparse.Namespace, nvcc: str, launcher: list[str], sass: list[str], ptx: list[str]) -> tuple[bytes, int]:
    stem = Path(args.source).stem
    scratch = _scratch(Path(args.source).read_bytes(), stem)
    parts = Path(f"{args.out}.parts")
    parts.mkdir(parents=True, exist_ok=True)
    report = b""

    def run(command: list[str], cwd: Path | None = None) -> int:
        nonlocal report
        result = subprocess.run(launcher + command, stderr=subprocess.PIPE, check=False, cwd=cwd)
        report += result.stderr
        return result.returncode

    ptx_files = {}
    for arch in sorted(set(sass) | set(ptx), key=lambda a: (len(a), a)):
        out = f"{stem}.compute_{arch}.{os.getpid()}.ptx"  # the output's name is not in the key
        if rc := run(ptx_command(nvcc, stem, arch, out, werror=args.werror), cwd=scratch):
            return report, rc
        ptx_files[arch] = parts / f"{stem}.compute_{arch}.ptx"
        os.replace(scratch / out, ptx_files[arch])
    images = []
    for arch in sass:
        cubin = str(parts / f"{stem}.sm_{arch}.cubin")
        if rc := run(ptxas_command(_beside(nvcc, "ptxas"), arch, str(ptx_files[arch]), cubin, werror=args.werror)):
            return report, rc
        images.append(("elf", arch, cubin))
    images += [("ptx", arch, str(ptx_files[arch])) for arch in ptx]
    result = subprocess.run(fatbinary_command(_beside(nvcc, "fatbinary"), args.out, images, compress=args.compress), stderr=subprocess.PIPE, check=False)
    shutil.rmtree(parts, ignore_errors=True)
    return report + result.stderr, result.returncode


def _run_nvrtc(args: argparse.Namespace, sass: list[str], ptx: list[str]) -> int:
    from aotc.build import nvrtc_fatbin

    argv = ["--cuda", os.environ.get("AOTC_TOOLCHAIN_CUDA", "13"), "--sass", ",".join(sass), "--ptx", ",".join(ptx), "--out", args.out]
    if args.resources:
        argv += ["--resources", args.resources]
    if args.werror:
        argv.append("--werror")
    argv.append(f"--compress={args.compress}")
    return nvrtc_fatbin.main([*argv, args.source])


def _step_options(args: argparse.Namespace, kind: str, sass: list[str], ptx: list[str], fingerprint: str) -> list[str] | None:
    """Everything of this step's that its fatbin depends on, beside the source and the
    compiler's fingerprint; None if some of it cannot be known (then nothing is cached)."""
    from aotc.build.compiler_fingerprint import env_flags, headers_digest
    from aotc.build.fatbin_cache import digest_text

    options = [f"kind={kind}", f"sass={','.join(sass)}", f"ptx={','.join(ptx)}", f"compress={args.compress}"]
    options.append(f"werror={int(args.werror)}")
    if kind == "nvrtc":
        return [*options, f"cuda={os.environ.get('AOTC_TOOLCHAIN_CUDA', '13')}"]
    launcher = os.environ.get("AOTC_COMPILER_LAUNCHER", "").strip(";")
    options.append("pipeline=" + ("per-arch" if launcher else "one-call"))
    flags = env_flags()
    options += flags
    nvcc = os.environ.get("AOTC_TOOLCHAIN_NVCC") or "nvcc"
    fingerprint_file = Path(os.environ["AOTC_TOOLCHAIN_FINGERPRINT"])
    memo = fingerprint_file.parent / "headers" / digest_text(fingerprint + "\n".join(flags))[:16]
    for arch in sorted(set(sass) | set(ptx), key=lambda a: (len(a), a)):
        digest = headers_digest(nvcc, arch, memo)
        if digest is None:
            return None
        options.append(f"headers compute_{arch} {digest}")
    return options


def step_key(args: argparse.Namespace, kind: str, sass: list[str], ptx: list[str], source: bytes) -> CacheKey | None:
    """The key of this step's outputs: the fatbin cache's key, and the batch's record of what
    built a fatbin. None where it cannot be known (no fingerprint, no header digest)."""
    from aotc.build import fatbin_cache

    path = os.environ.get("AOTC_TOOLCHAIN_FINGERPRINT", "")
    try:
        fingerprint = Path(path).read_text() if path else ""
    except OSError:
        fingerprint = ""
    if not fingerprint:  # without a fingerprint, never guess
        return None
    options = _step_options(args, kind, sass, ptx, fingerprint)
    return None if options is None else fatbin_cache.fatbin_key(source, fingerprint=fingerprint, options=options)


def _write_hit(args: argparse.Namespace, fatbin: bytes, report: bytes) -> None:
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    temp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    temp.write_bytes(fatbin)
    os.replace(temp, out)
    if args.resources:
        Path(args.resources).write_bytes(report)
    show_report(report, args.source, failed=False)


def _cached(args: argparse.Namespace, kind: str, sass: list[str], ptx: list[str], compile_step: Callable[[], int]) -> int:
    """Run ``compile_step`` through the fatbin cache: a hit writes its outputs instead."""
    import warnings

    from aotc.build import fatbin_cache
    from aotc.errors import AotcError, BuildError, CacheWarning

    library = args.library or Path(args.source).parent.parent.name
    kernel = Path(args.source).stem
    try:
        cache = fatbin_cache.build_cache()
        source = Path(args.source).read_bytes()
    except AotcError as exc:
        print(f"aotc: error: {exc}", file=sys.stderr)
        return 1
    except OSError:
        return compile_step()  # the compiler reports a missing source
    if cache is None:
        return compile_step()
    if reason := fatbin_cache.uncacheable_reason(source):
        print(f"aotc: {library}: not cached {kernel}: {reason}")
        return compile_step()
    key = step_key(args, kind, sass, ptx, source)
    if key is None:
        return compile_step()

    failed = 0  # the compiler's exit status, when it failed inside the fill

    def build() -> bytes:
        nonlocal failed
        if failed := compile_step():
            msg = f"{args.source}: the compiler exited with {failed}"
            raise BuildError(msg)  # stores nothing, and releases the fill lock
        report = Path(args.resources).read_bytes() if args.resources else b""
        return fatbin_cache.pack(Path(args.out).read_bytes(), report)

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", CacheWarning)
        hits = cache.stats.hits
        try:
            payload = cache.get_or_create(key, build)
        except BuildError:
            if failed:
                return failed  # the compiler has said why
            raise
    for warning in caught:
        print(f"aotc: warning: {str(warning.message).removeprefix('aotc: ')}", file=sys.stderr)
    if cache.stats.hits == hits:
        return 0  # compiled here: the outputs are written and the report shown
    parts = fatbin_cache.unpack(payload)
    if parts is None:
        return compile_step()
    _write_hit(args, *parts)
    print(f"aotc: {library}: cached {kernel}")
    return 0


def compile_kernel(args: argparse.Namespace, kind: str, sass: list[str], ptx: list[str]) -> int:
    """One kernel's step: ``args.source`` to ``args.out`` (and ``args.resources``), through the fatbin cache."""
    return _cached(args, kind, sass, ptx, lambda: _run_nvrtc(args, sass, ptx) if kind == "nvrtc" else _run_nvcc(args, sass, ptx))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="aotc-compile")
    parser.add_argument("--library", default="", help="the library's name, for the log")
    parser.add_argument("--sass", default="")
    parser.add_argument("--ptx", default="")
    parser.add_argument("--werror", action="store_true")
    parser.add_argument("--compress", choices=COMPRESS_MODES, default="size")
    one = parser.add_argument_group("one kernel: SOURCE to --out (and --resources)")
    one.add_argument("--out")
    one.add_argument("--resources", default="")
    batch = parser.add_argument_group("a batch: each KERNEL's GEN/KERNEL.cu to FATBIN/KERNEL.fatbin, where out of date")
    batch.add_argument("--fatbin-dir")
    batch.add_argument("--gen-dir")
    parser.add_argument("names", nargs="+", metavar="SOURCE | KERNEL")
    args = parser.parse_args(argv)
    sass, ptx = _arch_list(args.sass), _arch_list(args.ptx)
    kind = os.environ.get("AOTC_TOOLCHAIN_KIND", "nvcc")
    if args.fatbin_dir and args.gen_dir and not args.out:
        from aotc.build._compile_batch import run_batch

        return run_batch(args, kind, sass, ptx, compile_kernel, step_key)
    if not args.out or len(args.names) != 1 or args.fatbin_dir or args.gen_dir:
        parser.error("give one SOURCE with --out, or --fatbin-dir and --gen-dir with KERNEL names")
    args.source = args.names[0]
    return compile_kernel(args, kind, sass, ptx)


if __name__ == "__main__":
    sys.exit(main())
