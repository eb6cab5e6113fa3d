"""The ``aotc`` command line, run as a user runs it: exit codes 0 ok, 1 failure,
2 usage or input error; expected failures print one line and no traceback."""

from __future__ import annotations

import json
import re
import zipfile
from pathlib import Path

from aotc._version import __version__
from aotc.build.index_writer import dumps, seal
from aotc.index import SCHEMA
from conftest import REPO, RunAotc
from index_support import TOOLKIT, kernel_entry, param
from tropical_manifest import tropical_manifest

MANIFEST = tropical_manifest(
    "mini",
    {"maxplus": "{add: max, mul: add, zero: -inf, one: 0}"},
    ["{semiring: maxplus, dtype: f32, pass: [forward, argmax], variant: [single, batched]}"],
    tile="{block_m: 32, block_n: 64, block_k: 8, thread_m: 4, thread_n: 8}",
    head="archs: {sass: [75, 80], ptx: [80]}",
)
KERNELS = [
    "gemm_maxplus_f32_forward",
    "gemm_maxplus_f32_forward_batched",
    "gemm_maxplus_f32_argmax",
    "gemm_maxplus_f32_argmax_batched",
]


def write_manifest(folder: Path, text: str = MANIFEST) -> Path:
    (folder / "templates").mkdir(exist_ok=True)
    (folder / "templates" / "gemm.cu.j2").write_text("// {{ kernel_name }}\n")
    path = folder / "manifest.yaml"
    path.write_text(text)
    return path


def write_library(folder: Path) -> Path:
    """A library folder as a build leaves it, with stand-in fatbin and source bytes."""
    (folder / "src").mkdir(parents=True)
    kernels = {}
    for name, fatbin in (("k1", b"fatbin one"), ("k2", b"fatbin two!")):
        source = f"// {name}\n".encode()
        (folder / f"{name}.fatbin").write_bytes(fatbin)
        (folder / "src" / f"{name}.cu").write_bytes(source)
        kernels[name] = kernel_entry(
            name, fatbin=fatbin, source=source, variant=name, params=[param("A", "ptr"), param("M", "i32")],
            block=(8, 8, 1), grid=(("M", 64), ("1", 1), ("1", 1)), ptx=("90",),
        )  # fmt: skip
    semirings = {"maxplus": {"add": "max", "mul": "add", "zero": "-inf", "one": "0", "counting": False}}
    index = {
        "schema": SCHEMA, "library": "fake", "aotc_version": __version__, "toolkit": TOOLKIT,
        "semirings": semirings, "kernels": kernels,
    }  # fmt: skip
    (folder / "index.json").write_bytes(dumps(seal(index)))
    return folder


def one_line_error(stderr: str) -> str:
    lines = stderr.splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("aotc: error: "), stderr
    return lines[0].removeprefix("aotc: error: ")


def test_version(run_aotc: RunAotc) -> None:
    result = run_aotc("--version")
    assert (result.returncode, result.stdout, result.stderr) == (0, f"aotc {__version__}\n", "")


def test_no_command_is_a_usage_error(run_aotc: RunAotc) -> None:
    result = run_aotc()
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.splitlines()[-1] == "aotc: error: the following arguments are required: COMMAND"


def test_unknown_command_is_a_usage_error(run_aotc: RunAotc) -> None:
    result = run_aotc("frobnicate")
    assert result.returncode == 2
    assert result.stderr.startswith("usage: aotc ")
    assert "aotc: error: argument COMMAND: invalid choice: 'frobnicate'" in result.stderr.splitlines()[-1]


def test_list_without_a_manifest_is_a_usage_error(run_aotc: RunAotc) -> None:
    result = run_aotc("list")
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1] == "aotc list: error: the following arguments are required: manifest"


def test_list_prints_every_kernel(run_aotc: RunAotc, tmp_path: Path) -> None:
    result = run_aotc("list", str(write_manifest(tmp_path)))
    assert (result.returncode, result.stderr) == (0, "")
    lines = result.stdout.splitlines()
    assert lines[0] == "library mini: 4 kernels"
    assert lines[1] == "SASS 75, 80; PTX 80"
    assert re.split(r"\s{2,}", lines[2]) == ["kernel", "family", "axes", "template", "parameters", "grid", "block", "static smem", "dynamic smem"]
    rows = [re.split(r"\s{2,}", line) for line in lines[3:]]
    assert [row[0] for row in rows] == KERNELS
    smem = str(2 * 8 * (32 + 64) * 4)
    assert rows[0][:3] == ["gemm_maxplus_f32_forward", "gemm", "semiring=maxplus dtype=f32 pass=forward variant=single"]
    assert rows[0][5:] == ["cdiv(N, 64), cdiv(M, 32), 1", "8x8x1", smem, "0"]
    assert rows[3][2] == "semiring=maxplus dtype=f32 pass=argmax variant=batched"


def test_list_prints_a_declared_familys_kernels(run_aotc: RunAotc) -> None:
    result = run_aotc("list", str(REPO / "examples" / "rowops" / "kernels" / "manifest.yaml"))
    assert (result.returncode, result.stderr) == (0, "")
    lines = result.stdout.splitlines()
    assert lines[0] == "library rowops: 16 kernels"
    assert re.split(r"\s{2,}", lines[2]) == ["kernel", "family", "axes", "template", "parameters", "grid", "block", "static smem", "dynamic smem"]
    assert re.split(r"\s{2,}", lines[3]) == [
        "softmax_f32", "softmax", "dtype=f32 threads=256", "softmax.cu.j2", "const float* x, float* y, int batch, int rows, int cols", "batch*rows, 1, 1", "256x1x1", "0", "0",
    ]  # fmt: skip


def test_list_prints_the_tropical_familys_static_shared_memory(run_aotc: RunAotc) -> None:
    result = run_aotc("list", str(REPO / "kernels" / "manifest.yaml"))
    assert (result.returncode, result.stderr) == (0, "")
    rows = {row[0]: row for row in (re.split(r"\s{2,}", line) for line in result.stdout.splitlines()[3:])}
    assert len(rows) == 86
    assert rows["gemm_maxplus_f64_argmax"][2] == "semiring=maxplus dtype=f64 pass=argmax variant=single"
    assert rows["gemm_maxplus_f64_argmax"][5:] == ["cdiv(N, 64), cdiv(M, 64), 1", "16x16x1", str(2 * 8 * (64 + 64) * 8), "0"]
    assert rows["gemm_maxplus_f32_backward_b_batched"][5:] == ["cdiv(N, 256), 1, batch", "256x1x1", "0", "0"]


def test_list_of_a_missing_manifest_is_one_line_exit_1(run_aotc: RunAotc, tmp_path: Path) -> None:
    result = run_aotc("list", str(tmp_path / "nope.yaml"))
    assert (result.returncode, result.stdout) == (1, "")
    assert one_line_error(result.stderr).startswith(f"{tmp_path / 'nope.yaml'}: cannot read manifest")


def test_list_of_a_malformed_manifest_is_one_line_exit_1(run_aotc: RunAotc, tmp_path: Path) -> None:
    path = write_manifest(tmp_path, MANIFEST.replace("maxplus: {add: max,", "maxplus: {add: maximum,"))
    result = run_aotc("list", str(path))
    assert (result.returncode, result.stdout) == (1, "")
    assert one_line_error(result.stderr).startswith(f"{path}:4: semirings.maxplus.add: ")


def test_generate_writes_then_leaves_unchanged(run_aotc: RunAotc, tmp_path: Path) -> None:
    manifest = write_manifest(tmp_path)
    out = tmp_path / "out"
    first = run_aotc("generate", str(manifest), "-o", str(out))
    assert (first.returncode, first.stdout) == (0, f"{out}: 4 written, 0 unchanged, 0 removed\n")
    assert sorted(p.name for p in out.glob("*.cu")) == sorted(f"{k}.cu" for k in KERNELS)
    second = run_aotc("generate", str(manifest), "-o", str(out))
    assert second.stdout == f"{out}: 0 written, 4 unchanged, 0 removed\n"


def test_generate_needs_an_output_folder(run_aotc: RunAotc, tmp_path: Path) -> None:
    result = run_aotc("generate", str(write_manifest(tmp_path)))
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1] == "aotc generate: error: the following arguments are required: -o/--output"


def test_inspect_a_library_folder(run_aotc: RunAotc, tmp_path: Path) -> None:
    library = write_library(tmp_path / "lib")
    result = run_aotc("inspect", str(library))
    assert (result.returncode, result.stderr) == (0, "")
    lines = result.stdout.splitlines()
    assert lines[0] == f"fake: {library} (aotc {__version__}, nvcc 13.0.88, driver >= 13000)"
    assert re.split(r"\s{2,}", lines[1]) == ["kernel", "sm_80", "sm_90", "regs", "spill", "size", "check"]
    assert re.split(r"\s{2,}", lines[2]) == ["k1", "SASS", "PTX", "40", "0", "10 B", "ok"]
    assert lines[-1] == "2 kernels, 21 B; the index's checksums hold and every fatbin and source matches its sha256"


def test_inspect_refuses_an_edited_launch_geometry_in_one_line(run_aotc: RunAotc, tmp_path: Path) -> None:
    library = write_library(tmp_path / "lib")
    index = json.loads((library / "index.json").read_text())
    index["kernels"]["k2"]["launch"]["block"] = [16, 8, 1]  # valid, but not what the build sealed
    (library / "index.json").write_text(json.dumps(index))
    result = run_aotc("inspect", str(library))
    assert (result.returncode, result.stdout) == (1, "")
    assert one_line_error(result.stderr) == (
        f"{library}/index.json: kernels.k2.launch: checksum mismatch: edited after the build (rebuild or reinstall the library)"
    )


def test_inspect_a_tampered_fatbin_fails_with_exit_1(run_aotc: RunAotc, tmp_path: Path) -> None:
    library = write_library(tmp_path / "lib")
    (library / "k2.fatbin").write_bytes(b"fatbin TWO!")
    result = run_aotc("inspect", str(library / "index.json"))
    assert result.returncode == 1
    assert one_line_error(result.stderr).startswith(f"{library}/k2.fatbin: sha256 ")
    assert re.split(r"\s{2,}", result.stdout.splitlines()[3])[-1] == "FAILED"
    assert result.stdout.splitlines()[-1] == "2 kernels, 10 B; 1 problems"


def test_inspect_of_nothing_is_one_line_exit_1(run_aotc: RunAotc, tmp_path: Path) -> None:
    result = run_aotc("inspect", str(tmp_path / "none.txt"))
    assert (result.returncode, result.stdout) == (1, "")
    assert one_line_error(result.stderr) == (
        f"{tmp_path / 'none.txt'}: not a wheel, a library folder, an index.json or an installed library name"
    )


def test_inspect_of_another_schema_is_one_line_exit_1(run_aotc: RunAotc, tmp_path: Path) -> None:
    (tmp_path / "index.json").write_text(json.dumps({"schema": 99, "kernels": {}}))
    result = run_aotc("inspect", str(tmp_path))
    assert result.returncode == 1
    assert one_line_error(result.stderr) == f"{tmp_path}/index.json: index schema 99, this aotc reads schema {SCHEMA}"


def test_a_bad_compute_capability_is_a_usage_error(run_aotc: RunAotc) -> None:
    result = run_aotc("doctor", "--arch", "87")
    assert result.returncode == 2
    assert result.stderr.splitlines()[-1] == (
        "aotc doctor: error: argument --arch: '87' is not a compute capability; write it as X.Y, e.g. 8.7"
    )


def test_a_configuration_error_is_one_line_exit_1(run_aotc: RunAotc, tmp_path: Path) -> None:
    env = {"AOTC_CACHE_DIR": str(tmp_path / "cache"), "AOTC_JIT": "sometimes"}
    result = run_aotc("warm", "--arch", "9.0", "--library", str(tmp_path), env=env)
    assert (result.returncode, result.stdout) == (1, "")
    assert one_line_error(result.stderr) == "AOTC_JIT='sometimes' is not one of: auto, nvrtc, driver, off"


def test_inspect_a_wheel_checks_its_members_and_its_index(run_aotc: RunAotc, tmp_path: Path) -> None:
    library = write_library(tmp_path / "lib")
    wheel = tmp_path / "fake-1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path in sorted(p for p in library.rglob("*") if p.is_file()):
            data = b"fatbin TWO!" if path.name == "k2.fatbin" else path.read_bytes()
            archive.writestr(f"fake/_lib/fake/{path.relative_to(library).as_posix()}", data)
    result = run_aotc("inspect", str(wheel))
    assert result.returncode == 1
    assert one_line_error(result.stderr).startswith(f"{wheel}!fake/_lib/fake/k2.fatbin: sha256 ")
    assert result.stdout.splitlines()[-1] == "2 kernels, 10 B; 1 problems"
