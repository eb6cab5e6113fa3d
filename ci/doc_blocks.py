"""The docs' code blocks, run as a reader would run them (issue 35).

    python ci/doc_blocks.py run README.md --clone --no-gpu-too --pip torch==2.13.0 jax==0.10.2
    python ci/doc_blocks.py run examples/rowops/README.md --pip torch==2.13.0
    python ci/doc_blocks.py list README.md

A block is a fenced code block; its info string is ``LANG [NAME]``. What the
runner does with it, in the doc's order, depends only on those two words:

- NAME is a relative path (it has a ``/`` or a ``.``): the block is that
  file's text, and is written there (in the folder the shell steps have
  reached so far), whatever its language;
- ``sh``, ``bash``, ``shell``: run verbatim, in one shell session (``cd``,
  ``export`` and a venv's activation carry over to the next block), in a fresh
  folder: an empty one, or with ``--clone`` a fresh clone of this repository
  at HEAD. The session starts in a new venv holding only pip, with
  ``AOTC_BACKEND=emulator`` (CI has no GPU);
- ``python`` without a path: a script, run from outside that folder (so
  ``import`` finds what was installed, not a source folder) in the session's
  environment, with ``AOTC_BACKEND=emulator``. With ``--no-gpu-too``, again
  with ``AOTC_BACKEND`` unset: on a machine without a GPU it must then exit 0
  or end in ``NoDeviceError``'s one line naming ``AOTC_BACKEND=emulator``;
- anything else (``text``, ``yaml``, ``toml`` without a path): shown only.

A block that cannot run here has a NAME listed in ``SKIPPED`` below, with the
reason, and the doc says why beside it. Every other block runs: a block the
docs gain later runs without a change here. ``AOTC_SRC`` is a fresh clone of
this repository, for docs that build aotc's wheel from "your clone of aotc";
``AOTC_ARCHS`` defaults to 80, so builds stay short. ``--pip`` installs the
frameworks the Python blocks import into the session's environment before
the first Python block runs. Prints one line per doc; on a failure, the
block's output and ``docs: FAILED: FILE:LINE``, and exits 1.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import NamedTuple

REPO = Path(__file__).resolve().parents[1]
SHELLS = ("sh", "bash", "shell")

# (doc, block name) -> why it does not run here. The doc says the same beside the block.
SKIPPED = {
    ("README.md", "tox"): "the whole test suite: CI runs it itself",
    ("README.md", "arch-overrides"): "two more full builds for other arch lists; ci/install-checks.sh checks both overrides",
    ("README.md", "farm-keys"): "an sccache-dist farm needs root and bubblewrap; ci/dist-build-check.sh runs the recipe",
    ("README.md", "farm-token"): "an sccache-dist farm needs root and bubblewrap; ci/dist-build-check.sh runs the recipe",
    ("README.md", "emulator-checks"): "my_tests.py is the reader's own; tox runs the second command",
    ("README.md", "warm-arch"): "needs NVRTC ('aotc[jit]'); tests/runtime/test_warm.py runs it",
    ("README.md", "runtime-extra-library"): "needs a library built from the reader's own manifest; examples/downstream is one, which CI builds",
    ("README.md", "declared-load"): "needs the rowops package installed: the tutorial (examples/rowops/README.md), which CI runs",
    ("examples/rowops/README.md", "upload"): "uploads to a package index",
}

NO_DEVICE = re.compile(r"(aotc\.errors\.)?NoDeviceError: no CUDA GPU: .*; to run the kernels on the CPU instead, set AOTC_BACKEND=emulator")
# What jax.jit appends to an exception leaving a jitted call (JAX_TRACEBACK_FILTERING's note).
JAX_NOTE = "For simplicity, JAX has removed its internal frames"


class Block(NamedTuple):
    doc: str  # the doc's path, relative to the repository
    line: int  # the line of the opening fence, 1-based
    lang: str
    name: str
    text: str

    @property
    def where(self) -> str:
        return f"{self.doc}:{self.line}"

    @property
    def path(self) -> str | None:
        """The file this block is the text of, or None."""
        return self.name if ("/" in self.name or "." in self.name) else None

    @property
    def kind(self) -> str:
        if self.path is not None:
            return "file"
        if (self.doc, self.name) in SKIPPED:
            return "skipped"
        if self.lang in SHELLS:
            return "shell"
        return "python" if self.lang == "python" else "shown"


FENCE = re.compile(r"^(?P<indent> *)(?P<fence>```+|~~~+)(?P<info>[^`]*)$")


def blocks(doc: str) -> list[Block]:
    """The fenced code blocks of ``doc`` (a path relative to the repository), in order."""
    lines = (REPO / doc).read_text().splitlines()
    found, i = [], 0
    while i < len(lines):
        match = FENCE.match(lines[i])
        if match is None:
            i += 1
            continue
        indent, fence, info = len(match["indent"]), match["fence"], match["info"].split()
        body, j = [], i + 1
        while j < len(lines) and not lines[j].strip().startswith(fence):
            line = lines[j]  # a block indented in a list item: its fence's indent off every line
            body.append(line[indent:] if line[:indent].strip() == "" else line.lstrip())
            j += 1
        if j == len(lines):
            raise SystemExit(f"docs: {doc}:{i + 1}: a code block that is never closed")
        lang = info[0] if info else ""
        name = info[1] if len(info) > 1 else ""
        found.append(Block(doc, i + 1, lang, name, "\n".join(body) + "\n"))
        i = j + 1
    return found


def problems(docs: list[str]) -> list[str]:
    """What is wrong with the docs' block names: a skipped name no block has, a name two blocks share."""
    found = []
    named = [(b.doc, b.name) for doc in docs for b in blocks(doc) if b.name]
    for key in named:
        if named.count(key) > 1:
            found.append(f"{key[0]}: two blocks are named {key[1]!r}")
    for doc, name in SKIPPED:
        if doc in docs and (doc, name) not in named:
            found.append(f"{doc}: SKIPPED names a block {name!r} that the doc does not have")
    return sorted(set(found))


class Session:
    """One shell session over many processes: each block sources the environment
    and folder the last one left, and leaves its own."""

    def __init__(self, state: Path, folder: Path, env: dict[str, str]) -> None:
        self.state = state
        state.mkdir(parents=True, exist_ok=True)
        (state / "pwd").write_text(f"{folder}\n")
        subprocess.run(["bash", "-c", f'export -p > "{state}/env.sh"'], env=env, check=True)

    def folder(self) -> Path:
        """The folder the last block left the session in."""
        return Path((self.state / "pwd").read_text().strip())

    def run(self, command: str, *, setup: str = "") -> subprocess.CompletedProcess:
        script = (
            f'. "{self.state}/env.sh"\ncd "$(cat "{self.state}/pwd")"\n{setup}\n'
            f"set -eo pipefail\n{command}\nset +e\n"
            f'export -p > "{self.state}/env.sh"; pwd > "{self.state}/pwd"\n'
        )
        path = self.state / "block.sh"
        path.write_text(script)
        return subprocess.run(["bash", str(path)], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, timeout=1800, env={})


def ends_in_no_device(output: str) -> bool:
    lines = [line for line in output.splitlines() if line.strip()]
    if len(lines) > 2 and lines[-1].startswith(JAX_NOTE):
        lines = lines[:-2]
    chained = "During handling of the above exception" in output or "direct cause of the following" in output
    return bool(lines) and NO_DEVICE.fullmatch(lines[-1]) is not None and not chained


def run_doc(doc: str, *, clone: bool, no_gpu_too: bool, pip: list[str], work: Path) -> int:
    source = work / "aotc-src"
    subprocess.run(["git", "clone", "--quiet", str(REPO), str(source)], check=True)
    folder = source if clone else work / "folder"
    folder.mkdir(exist_ok=True)
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    env.update(PATH=f"{venv / 'bin'}:{env['PATH']}", VIRTUAL_ENV=str(venv), AOTC_SRC=str(source), PIP_DISABLE_PIP_VERSION_CHECK="1")
    env["AOTC_BACKEND"] = "emulator"  # CI has no GPU: the shell steps' aotc commands run on the emulator too
    env.setdefault("AOTC_ARCHS", "80")
    env.setdefault("AOTC_CACHE_DIR", str(work / "jit-cache"))
    session = Session(work / "session", folder, env)
    counts = dict.fromkeys(("shell", "python", "file", "skipped", "shown"), 0)
    has_gpu: bool | None = None
    for block in blocks(doc):
        kind = block.kind
        counts[kind] += 1
        if kind == "file":  # where the doc's shell steps have gone (a `cd` in one carries over)
            target = session.folder() / block.path  # type: ignore[operator]
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(block.text)
            continue
        if kind == "shell":
            result = session.run(block.text)
            if result.returncode != 0:
                return failed(block, "sh", result.stdout)
            continue
        if kind != "python":
            continue
        if pip:
            result = session.run(f"python -m pip install --quiet {' '.join(pip)}")
            if result.returncode != 0:
                return failed(block, f"pip install {' '.join(pip)}", result.stdout)
            pip = []
        script = work / "snippets" / f"{Path(doc).stem}-{block.line}.py"
        script.parent.mkdir(exist_ok=True)
        script.write_text(block.text)
        result = session.run(f'AOTC_BACKEND=emulator python "{script}"')
        if result.returncode != 0:
            return failed(block, "python, AOTC_BACKEND=emulator", result.stdout)
        if no_gpu_too:
            if has_gpu is None:
                probe = "from aotc.runtime.backends.cuda_python import CudaPythonBackend as B; B().device()"
                has_gpu = session.run(f"unset AOTC_BACKEND; python -c '{probe}'").returncode == 0
            result = session.run(f'unset AOTC_BACKEND; python "{script}"')
            if result.returncode != 0 and (has_gpu or not ends_in_no_device(result.stdout)):
                return failed(block, "python, AOTC_BACKEND unset: expected success, or NoDeviceError naming the emulator as its last line", result.stdout)
    summary = ", ".join(f"{n} {kind}" for kind, n in counts.items() if n)
    modes = " (Python under the emulator, and without a backend)" if no_gpu_too and counts["python"] else ""
    print(f"docs: {doc}: {summary}{modes}")
    return 0


def failed(block: Block, how: str, output: str) -> int:
    print(output[-6000:], file=sys.stderr)
    print(f"docs: FAILED: {block.where} ({how})", file=sys.stderr)
    return 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    actions = parser.add_subparsers(dest="action", required=True)
    run = actions.add_parser("run", help="run a doc's blocks in a fresh folder and venv")
    run.add_argument("doc")
    run.add_argument("--clone", action="store_true", help="the folder is a fresh clone of this repository")
    run.add_argument("--no-gpu-too", action="store_true", help="run each Python block again without AOTC_BACKEND")
    run.add_argument("--pip", nargs="*", default=[], help="installed before the first Python block")
    run.add_argument("--keep", action="store_true", help="keep the work folder, and print where it is")
    listing = actions.add_parser("list", help="list a doc's blocks and what the runner does with each")
    listing.add_argument("doc", nargs="+")
    args = parser.parse_args()
    if args.action == "list":
        for doc in args.doc:
            for b in blocks(doc):
                print(f"{b.where}\t{b.kind}\t{b.lang}\t{b.name}")
        return 0
    wrong = problems([args.doc])
    if wrong:
        print("\n".join(f"docs: {p}" for p in wrong), file=sys.stderr)
        return 1
    work = Path(tempfile.mkdtemp(prefix="aotc-docs."))
    try:
        return run_doc(args.doc, clone=args.clone, no_gpu_too=args.no_gpu_too, pip=args.pip, work=work)
    finally:
        if args.keep:
            print(f"docs: work folder kept at {work}", file=sys.stderr)
        else:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
