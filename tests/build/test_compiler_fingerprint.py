"""The compiler's fingerprint: the toolkit behind a wrapper nvcc, and what changes the fatbin cache's key."""

from __future__ import annotations

import json
import os
import shutil
import stat
from pathlib import Path

import pytest

from aotc.build import compiler_fingerprint as fp

__all__: list[str] = []


def _exe(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def fake_toolkit(root: Path, version: str = "V13.0.88") -> Path:
    """A toolkit whose nvcc answers --version and -dryrun as nvcc does; returns its bin folder."""
    top = root / "cuda"
    bin_dir = top / "bin"
    # Finds its own folder, as the real one does: its bytes hold no path.
    _exe(bin_dir / "nvcc", f"""#!/bin/sh
here=$(cd "$(dirname "$0")" && pwd)
case " $* " in
  *" --version "*) echo "Cuda compilation tools, release 13.0, {version}"; exit 0;;
  *" -dryrun "*) cat >&2 <<EOF
#\\$ _HERE_=$here
#\\$ TOP=$here/..
#\\$ CICC_PATH=$here/../nvvm/bin
#\\$ NVVMIR_LIBRARY_DIR=$here/../nvvm/libdevice
#\\$ PATH=$here/../nvvm/bin:$here:/usr/bin:/bin
#\\$ sh -D__CUDA_ARCH_LIST__=750 -E -x c++ -D__CUDACC__ "aotc-empty.cu" -o "x.ii"
#\\$ "\\$CICC_PATH/cicc" -arch compute_75 "x.ii" -o "x.ptx"
EOF
  exit 0;;
esac
""")
    for name in ("ptxas", "fatbinary", "cudafe++", "nvcc.profile"):
        _exe(bin_dir / name, f"#!/bin/sh\n# {name} 13.0.88\n")
    _exe(top / "nvvm" / "bin" / "cicc", "#!/bin/sh\n# cicc\n")
    (top / "nvvm" / "libdevice").mkdir(parents=True)
    (top / "nvvm" / "libdevice" / "libdevice.10.bc").write_bytes(b"BC\xc0\xde")
    return bin_dir


def wrapper(path: Path, target: Path, version_suffix: str = "") -> Path:
    """A wrapper script on PATH that execs the toolkit's nvcc (maybe saying another version)."""
    if not version_suffix:
        return _exe(path, f'#!/bin/sh\nexec "{target}" "$@"\n')
    return _exe(path, f"""#!/bin/sh
if [ "$1" = --version ]; then "{target}" --version | sed 's/$/ {version_suffix}/'; exit 0; fi
exec "{target}" "$@"
""")


@pytest.fixture
def clean_flags(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in fp.ENV_FLAGS:
        monkeypatch.delenv(name, raising=False)


def test_a_wrapper_on_path_leads_to_the_toolkits_own_folder(tmp_path: Path) -> None:
    bin_dir = fake_toolkit(tmp_path)
    nvcc = wrapper(tmp_path / "usr-local-bin" / "nvcc", bin_dir / "nvcc")
    _exe(tmp_path / "usr-local-bin" / "ptxas", f'#!/bin/sh\nexec "{bin_dir}/ptxas" "$@"\n')  # a wrapper ptxas beside it
    toolkit = fp.toolkit_of(str(nvcc))
    assert toolkit is not None
    assert toolkit.bin_dir == str(bin_dir.resolve())
    assert toolkit.cicc_dir == str((bin_dir.parent / "nvvm" / "bin").resolve())
    assert toolkit.host_compiler == shutil.which("sh", path="/usr/bin:/bin")


def test_an_nvcc_without_a_dryrun_has_no_toolkit(tmp_path: Path) -> None:
    assert fp.toolkit_of(str(_exe(tmp_path / "nvcc", "#!/bin/sh\nexit 0\n"))) is None
    assert fp.toolkit_of(str(tmp_path / "missing-nvcc")) is None


def test_the_fingerprint_holds_digests_not_paths(tmp_path: Path, clean_flags: None) -> None:
    text, _ = fp.nvcc_fingerprint(str(fake_toolkit(tmp_path) / "nvcc"))
    assert str(tmp_path) not in text
    names = [line.split()[0] for line in text.splitlines()]
    for name in ("nvcc-as-found", "version", "nvcc", "cudafe++", "ptxas", "fatbinary", "cicc", "libdevice/libdevice.10.bc", "host"):
        assert name in names
    assert text.endswith("env NVCC_PREPEND_FLAGS=\nenv NVCC_APPEND_FLAGS=\nenv NVCC_CCBIN=\n")
    # The same toolkit installed elsewhere has the same fingerprint: machines share entries.
    assert fp.nvcc_fingerprint(str(fake_toolkit(tmp_path / "elsewhere") / "nvcc"))[0] == text


def test_what_changes_the_fingerprint(tmp_path: Path, clean_flags: None, monkeypatch: pytest.MonkeyPatch) -> None:
    bin_dir = fake_toolkit(tmp_path)
    base = fp.nvcc_fingerprint(str(bin_dir / "nvcc"))[0]
    stub = wrapper(tmp_path / "stub" / "nvcc", bin_dir / "nvcc", version_suffix="(stub)")
    assert fp.nvcc_fingerprint(str(stub))[0] != base  # another nvcc, by its version text
    monkeypatch.setenv("NVCC_APPEND_FLAGS", "-DX=1")
    assert fp.nvcc_fingerprint(str(bin_dir / "nvcc"))[0] != base
    monkeypatch.delenv("NVCC_APPEND_FLAGS")
    (bin_dir / "ptxas").write_text("#!/bin/sh\n# ptxas 13.0.89\n")
    assert fp.nvcc_fingerprint(str(bin_dir / "nvcc"))[0] != base  # a patched ptxas, same version text


def test_digests_are_remembered_by_stat_and_redone_when_a_file_changes(tmp_path: Path, clean_flags: None) -> None:
    bin_dir = fake_toolkit(tmp_path)
    memo = tmp_path / "digests.json"
    fp.nvcc_fingerprint(str(bin_dir / "nvcc"), memo)
    known = json.loads(memo.read_text())
    ptxas = os.path.realpath(bin_dir / "ptxas")
    known[ptxas][4] = "remembered"
    memo.write_text(json.dumps(known))
    assert "ptxas remembered" in fp.nvcc_fingerprint(str(bin_dir / "nvcc"), memo)[0].splitlines()
    os.utime(ptxas, ns=(1, 1))  # a new mtime: hashed again
    assert "ptxas remembered" not in fp.nvcc_fingerprint(str(bin_dir / "nvcc"), memo)[0].splitlines()


def test_headers_digest_is_remembered_and_none_when_nvcc_fails(tmp_path: Path) -> None:
    log = tmp_path / "calls"
    nvcc = _exe(tmp_path / "nvcc", f"""#!/bin/sh
echo "$*" >> "{log}"
out=""; prev=""
for a in "$@"; do [ "$prev" = "-o" ] && out="$a"; prev="$a"; done
echo "preprocessed $*" > "$out"
""")
    memo = tmp_path / "memo"
    first = fp.headers_digest(str(nvcc), "80", memo)
    assert first is not None and len(first) == 64
    assert fp.headers_digest(str(nvcc), "80", memo) == first
    assert len(log.read_text().splitlines()) == 1  # the second answer came from the memo
    assert fp.headers_digest(str(nvcc), "90", memo) != first
    assert fp.headers_digest(str(_exe(tmp_path / "bad", "#!/bin/sh\nexit 1\n")), "80", None) is None


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="needs nvcc on PATH")
def test_the_nvcc_on_this_path_resolves_to_a_folder_holding_a_real_ptxas() -> None:
    toolkit = fp.toolkit_of(shutil.which("nvcc") or "nvcc")
    assert toolkit is not None
    ptxas = Path(toolkit.bin_dir) / "ptxas"
    assert ptxas.read_bytes()[:4] == b"\x7fELF"  # a binary sccache-dist can package, not a script
