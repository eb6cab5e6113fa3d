"""``aotc doctor``: what the runtime would do here, said plainly, without a GPU too."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from aotc.runtime.backends.cuda_python import CudaPythonBackend
from conftest import RunAotc, gpu_problem
from runtime_support import make_library

KERNELS = ["gemm_maxplus_f32_forward", "gemm_maxplus_f32_forward_batched", "gemm_minplus_f32_forward"]


HAS_GPU = not gpu_problem()


@pytest.fixture(scope="module")
def lib(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_library(tmp_path_factory.mktemp("rt"))  # SASS and PTX for 8.0 only


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    return {"AOTC_CACHE_DIR": str(tmp_path / "cache"), "AOTC_JIT": "", "AOTC_BACKEND": ""}


def decisions(stdout: str) -> dict[str, tuple[str, ...]]:
    """kernel -> (decision, image, cache) from doctor's table."""
    rows = re.findall(r"^  (gemm_\w+)\s+(\w+)\s+(.+?)\s*$", stdout, re.MULTILINE)
    return {kernel: (decision, *re.split(r"\s{2,}", rest)) for kernel, decision, rest in rows}


def test_without_a_gpu_it_reports_all_then_fails_naming_the_emulator(run_aotc: RunAotc, lib: Path, env: dict[str, str]) -> None:
    result = run_aotc("doctor", "--library", str(lib), env=env)
    out = result.stdout
    assert "backend: cuda-python, chosen automatically (AOTC_BACKEND unset)" in out
    if HAS_GPU:  # pragma: no cover - on a GPU machine
        assert result.returncode == 0, result.stderr
        assert re.search(r"device 0: .*compute capability", out)
    else:
        # The whole report, then the way out as the last line, and a failure (issue 35).
        assert result.returncode == 1, result.stderr
        assert "device: no CUDA GPU" in out
        assert "decisions: no GPU to decide for; `aotc doctor --arch X.Y`" in out
        assert re.fullmatch(r"aotc: error: no CUDA GPU: .*; to run the kernels on the CPU instead, set AOTC_BACKEND=emulator\n", result.stderr)
    assert re.search(r"NVRTC: NVRTC \d+\.\d+ \(targets .*87", out)
    assert f"cache: {env['AOTC_CACHE_DIR']}: ok; 0 entries" in out
    assert f"library rt: {lib}, 3 kernels, nvcc 13.0.88; SASS 80; PTX 80" in out
    assert "Traceback" not in result.stderr
    # The route JAX arrays take, from the installed metadata, or that there is no jax.
    from importlib import metadata

    try:
        expected = f"jax: jaxlib {metadata.version('jaxlib')}; JAX arrays run through jax.experimental.buffer_callback"
        from aotc.runtime.jax_route import builtin_launcher

        in_use, why = builtin_launcher()
        if in_use:
            expected = f"launch through jaxlib's built-in launcher (triton_kernel_call_ffi, the library's fatbin as its module image; {why})"
        else:
            expected += f", on XLA's stream (Python each call); not jaxlib's built-in launcher: {why}"
    except metadata.PackageNotFoundError:
        expected = "jax: not installed (JAX arrays need jax and jaxlib)"
    assert expected in out


@pytest.mark.parametrize(
    ("arch", "decision", "image"),
    [
        pytest.param("8.0", "sass_exact", "SASS sm_80", id="exact"),
        pytest.param("8.6", "sass_compatible", "SASS sm_80", id="compatible"),
        pytest.param("8.7", "nvrtc_jit", "NVRTC -> sm_87", id="jetson"),
        pytest.param("12.0", "nvrtc_jit", "NVRTC -> sm_120", id="newer"),
    ],
)
def test_decisions_for_a_hypothetical_device(
    run_aotc: RunAotc, lib: Path, env: dict[str, str], arch: str, decision: str, image: str
) -> None:
    result = run_aotc("doctor", "--arch", arch, "--library", str(lib), env=env)
    assert result.returncode == 0, result.stderr
    major, minor = arch.split(".")
    assert f"decisions for a hypothetical sm_{major}{minor} device (--arch)" in result.stdout
    table = decisions(result.stdout)
    assert list(table) == KERNELS
    assert {row[:2] for row in table.values()} == {(decision, image)}
    assert f"summary: 3 {decision}" in result.stdout


def test_driver_jit_and_unavailable_follow_the_policy(run_aotc: RunAotc, lib: Path, env: dict[str, str]) -> None:
    driver = run_aotc("doctor", "--arch", "9.0", "--library", str(lib), env={**env, "AOTC_JIT": "driver"})
    assert {row[:2] for row in decisions(driver.stdout).values()} == {("driver_jit", "PTX compute_80")}
    assert "JIT policy: driver (AOTC_JIT)" in driver.stdout
    old_driver = run_aotc("doctor", "--arch", "9.0", "--driver", "12.4", "--library", str(lib), env={**env, "AOTC_JIT": "driver"})
    assert {row[0] for row in decisions(old_driver.stdout).values()} == {"unavailable"}
    assert "driver CUDA 12.4 is older than CUDA 13.0" in old_driver.stdout
    assert old_driver.returncode == 0


def test_the_cache_column_shows_what_warm_filled(run_aotc: RunAotc, lib: Path, env: dict[str, str]) -> None:
    before = run_aotc("doctor", "--arch", "9.0", "--library", str(lib), env=env)
    assert {row[2] for row in decisions(before.stdout).values()} == {"not cached"}
    assert run_aotc("warm", "--arch", "9.0", "--library", str(lib), "--kernel", KERNELS[1], env=env).returncode == 0
    after = run_aotc("doctor", "--arch", "9.0", "--library", str(lib), env=env)
    assert [row[2] for row in decisions(after.stdout).values()] == ["not cached", "cached", "not cached"]
    assert "1 entries" in after.stdout


def test_the_noop_backend_reports_its_pretend_device(run_aotc: RunAotc, lib: Path, env: dict[str, str]) -> None:
    result = run_aotc("doctor", "--library", str(lib), env={**env, "AOTC_BACKEND": "noop"})
    assert result.returncode == 0, result.stderr
    assert "backend: noop, AOTC_BACKEND=noop" in result.stdout
    assert "decisions for this device, sm_80" in result.stdout


@pytest.mark.parametrize(
    ("variable", "value"), [("AOTC_BACKEND", "cuda"), ("AOTC_JIT", "sometimes"), ("AOTC_CACHE_MAX_BYTES", "lots")]
)
def test_bad_configuration_is_reported_and_exits_1(
    run_aotc: RunAotc, lib: Path, env: dict[str, str], variable: str, value: str
) -> None:
    result = run_aotc("doctor", "--library", str(lib), env={**env, variable: value})
    assert result.returncode == 1
    assert f"{variable}={value!r}" in result.stdout
    assert "Traceback" not in result.stderr


def test_no_installed_libraries(run_aotc: RunAotc, env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    from aotc.runtime import doctor

    monkeypatch.setattr(doctor, "installed_libraries", lambda: [])
    report = doctor.diagnose()
    assert "libraries: none installed with aotc (pass --library NAME_OR_FOLDER)" in report.lines


def test_a_source_backend_has_no_images_to_choose(lib: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from aotc.runtime import doctor
    from aotc.runtime.backends.noop import NoopBackend

    class CompilesSources(NoopBackend):
        name = "emulator"
        image_format = "source"

    monkeypatch.setattr(doctor, "get_backend", lambda name: CompilesSources((0, 0)))
    monkeypatch.setenv("AOTC_CACHE_DIR", str(lib.parent / "doctor-cache"))
    lines = doctor.diagnose(libraries=[str(lib)]).lines
    assert "  decisions: none to make on the emulator backend, which compiles each kernel's source itself; " \
        "`aotc doctor --arch X.Y` shows them for a GPU" in lines
    with_arch = doctor.diagnose(arch=(8, 6), libraries=[str(lib)]).lines
    assert any(line.startswith("  summary: 3 sass_compatible") for line in with_arch)


# -- the driver against each library's toolkit ---------------------------------------

CUDA13 = {"compiler": "nvcc", "version": "13.0.88", "cuda_major": 13, "min_driver": 13000, "wheel": "aotc"}


def _diagnose_with_driver(lib: Path, version: int, monkeypatch: pytest.MonkeyPatch, **options: object) -> list[str]:
    """doctor's lines with the cuda-python backend over a stand-in driver of ``version``."""
    from aotc.runtime import doctor
    from fake_driver import FakeDriver

    monkeypatch.setattr(doctor, "get_backend", lambda name: CudaPythonBackend(driver=FakeDriver(version=version)))
    monkeypatch.setenv("AOTC_CACHE_DIR", str(lib.parent / "doctor-cache"))
    monkeypatch.delenv("AOTC_BACKEND", raising=False)
    return doctor.diagnose(libraries=[str(lib)], **options)  # type: ignore[arg-type]


@pytest.fixture
def lib13(tmp_path: Path) -> Path:
    from runtime_support import rewrite_index

    lib = make_library(tmp_path)
    rewrite_index(lib, lambda index: index.update(toolkit=CUDA13))
    return lib


def test_a_new_enough_driver_is_ok(lib13: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    report = _diagnose_with_driver(lib13, 13010, monkeypatch)
    assert "driver: CUDA 13.1 (cuDriverGetVersion 13010)" in report.lines
    assert "  driver: needs CUDA 13.0 (cuDriverGetVersion 13000, an R580 or newer driver); " \
        "cuda-python: CUDA 13.1 (13010): OK" in report.lines
    assert report.problems == 0


def test_an_old_driver_is_too_old_and_a_problem(lib13: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    report = _diagnose_with_driver(lib13, 12040, monkeypatch)
    assert "driver: CUDA 12.4 (cuDriverGetVersion 12040)" in report.lines
    (line,) = [line for line in report.lines if line.startswith("  driver:")]
    assert line.startswith(
        "  driver: needs CUDA 13.0 (cuDriverGetVersion 13000, an R580 or newer driver); cuda-python: CUDA 12.4 (12040): "
        "too old: this GPU driver supports CUDA 12.4"
    )
    assert line.endswith("pip install aotc-cuda12x")
    assert report.problems == 1


def test_driver_option_checks_a_hypothetical_driver(lib13: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    report = _diagnose_with_driver(lib13, 13010, monkeypatch, driver=(12, 8))
    assert any(line.startswith("  driver: needs CUDA 13.0") and "--driver: CUDA 12.8 (12080): too old" in line for line in report.lines)
    assert report.problems == 1


def test_an_index_without_toolkit_is_not_checked(lib: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    report = _diagnose_with_driver(lib, 11080, monkeypatch)
    assert "  driver: not checked (index.json names no toolkit; it was built by an older aotc)" in report.lines
    assert report.problems == 0


def test_without_a_driver_the_requirement_is_still_shown(lib13: Path, run_aotc: RunAotc, env: dict[str, str]) -> None:
    result = run_aotc("doctor", "--library", str(lib13), env={**env, "AOTC_BACKEND": "noop"})
    assert result.returncode == 0, result.stderr
    assert "driver: none to check (the noop backend runs without an NVIDIA driver)" in result.stdout
    assert "  driver: needs CUDA 13.0 (cuDriverGetVersion 13000, an R580 or newer driver); " \
        "no driver here to check (`aotc doctor --driver X.Y` checks one)" in result.stdout
