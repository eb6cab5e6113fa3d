"""The CMake package, driven as a downstream project would drive it.

Builds use a single architecture (sm_75) to stay fast; the full matrix is
built once, by the wheel build that the installed-wheel tests check.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import aotc
from aotc.index import SCHEMA
from conftest import REPO, RunAotc, aotc_env, require_nvrtc

FIXTURE = REPO / "tests" / "packages" / "incremental"
# The compile step names each kernel it compiles: a batch's command names them all.
_COMPILED = re.compile(r"^aotc: \w+: compiling (\w+)$", re.MULTILINE)

pytestmark = pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")


class Project:
    def __init__(self, root: Path) -> None:
        self.root = root
        self.build_dir = root / "build"
        self.manifest = root / "kernels" / "manifest.yaml"
        self.templates = root / "kernels" / "templates"

    def configure(self, *defines: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
        command = [
            "cmake", "-S", str(self.root), "-B", str(self.build_dir), "-G", "Ninja",
            f"-Daotc_DIR={aotc.cmake_dir()}", f"-DPython_EXECUTABLE={sys.executable}", *defines,
        ]  # fmt: skip
        return subprocess.run(command, capture_output=True, text=True, env=aotc_env(env), timeout=600)

    def build(self) -> set[str]:
        """Build, and return the kernels whose sources nvcc compiled."""
        result = subprocess.run(
            ["cmake", "--build", str(self.build_dir), "-v"], capture_output=True, text=True, env=aotc_env(), timeout=900
        )
        assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
        return set(_COMPILED.findall(result.stdout))

    @property
    def stage(self) -> Path:
        return self.build_dir / "aotc" / "mini" / "lib"


@pytest.fixture
def project(tmp_path: Path) -> Project:
    root = tmp_path / "project"
    shutil.copytree(FIXTURE, root)
    # The real templates beside the fixture's alt.cu.j2, so this also checks that they compile.
    shutil.copytree(REPO / "aotc" / "build" / "templates" / "tropical", root / "kernels" / "templates", dirs_exist_ok=True)
    return Project(root)


def test_rebuilds_compile_exactly_what_changed(project: Project) -> None:
    configured = project.configure("-DAOTC_ARCHS=75")
    assert configured.returncode == 0, configured.stderr
    assert project.build() == {"gemm_maxplus_f32_forward", "alt_minplus_f32_forward"}

    assert project.build() == set(), "a rebuild with nothing changed compiled something"

    # Touching the manifest without changing any kernel compiles nothing.
    project.manifest.write_text(project.manifest.read_text() + "# a comment\n")
    assert project.build() == set()

    # One more dtype in one family: only the new kernel.
    text = project.manifest.read_text()
    project.manifest.write_text(text.replace("{semiring: [maxplus], dtype: [f32]", "{semiring: [maxplus], dtype: [f32, i32]"))
    assert project.build() == {"gemm_maxplus_i32_forward"}

    # Editing one template: only the kernels rendered from it.
    alt = project.templates / "alt.cu.j2"
    alt.write_text(alt.read_text().replace("// alt:", "// alt (edited):"))
    assert project.build() == {"alt_minplus_f32_forward"}

    # The shared template is used by every kernel, so all of them recompile.
    gemm = project.templates / "gemm.cu.j2"
    gemm.write_text("// edited\n" + gemm.read_text())
    assert project.build() == {"gemm_maxplus_f32_forward", "gemm_maxplus_i32_forward", "alt_minplus_f32_forward"}

    index = json.loads((project.stage / "index.json").read_text())
    assert list(index["kernels"]) == ["gemm_maxplus_f32_forward", "gemm_maxplus_i32_forward", "alt_minplus_f32_forward"]
    assert all(k["sass"] == ["75"] and k["ptx"] == ["75"] for k in index["kernels"].values())


def test_index_and_install_layout(project: Project, tmp_path: Path, run_aotc: RunAotc) -> None:
    assert project.configure("-DAOTC_ARCHS=80", "-DAOTC_PTX_ARCHS=80").returncode == 0
    project.build()
    prefix = tmp_path / "prefix"
    subprocess.run(["cmake", "--install", str(project.build_dir), "--prefix", str(prefix)], check=True, capture_output=True)
    lib = prefix / "mini_kernels"
    assert sorted(p.relative_to(lib).as_posix() for p in lib.rglob("*") if p.is_file()) == [
        "alt_minplus_f32_forward.fatbin",
        "gemm_maxplus_f32_forward.fatbin",
        "index.json",
        "src/alt_minplus_f32_forward.cu",
        "src/gemm_maxplus_f32_forward.cu",
    ]
    index = json.loads((lib / "index.json").read_text())
    assert index["schema"] == SCHEMA
    assert index["aotc_version"] == aotc.__version__
    toolkit = index["toolkit"]
    assert re.fullmatch(r"\d+\.\d+\.\d+", toolkit["version"])
    assert (toolkit["compiler"], toolkit["cuda_major"], toolkit["min_driver"]) == ("nvcc", 13, 13000)
    # A downstream project's users are sent to its own wheel, not aotc's.
    assert toolkit["wheel"] == "incremental"
    entry = index["kernels"]["gemm_maxplus_f32_forward"]
    assert entry["symbol"] == "gemm_maxplus_f32_forward"
    assert entry["axes"] == {"semiring": "maxplus", "dtype": "f32", "pass": "forward"}
    assert [p["name"] for p in entry["params"]] == ["A", "B", "C", "M", "N", "K", "lda", "ldb", "ldc"]
    assert "".join(p["pack"] for p in entry["params"]) == "QQQiiiqqq"
    assert entry["launch"]["block"] == [8, 8, 1]
    assert entry["launch"]["shared_bytes_static"] == 2 * 8 * (32 + 32) * 4
    assert entry["fatbin"]["size"] == (lib / entry["fatbin"]["file"]).stat().st_size
    assert (entry["sass"], entry["ptx"]) == (["80"], ["80"])

    ok = run_aotc("inspect", str(lib))
    assert ok.returncode == 0, ok.stderr
    assert "every fatbin and source matches its sha256" in ok.stdout


def test_arch_override_from_the_environment(project: Project) -> None:
    assert project.configure(env={"AOTC_ARCHS": "86"}).returncode == 0
    project.build()
    index = json.loads((project.stage / "index.json").read_text())
    assert {tuple(k["sass"]) for k in index["kernels"].values()} == {("86",)}


def test_the_compiler_a_project_names_is_the_one_that_builds(project: Project) -> None:
    """A project of many small kernels names NVRTC once, as a CMake variable (README: its
    pyproject's ``cmake.define``), though nvcc is on PATH: the configure says so, and
    every kernel is compiled in process and indexed as NVRTC's."""
    require_nvrtc()
    configured = project.configure("-DAOTC_ARCHS=75", "-DAOTC_COMPILER=nvrtc")
    assert configured.returncode == 0, configured.stderr
    assert "aotc: compiler: NVRTC: nvrtc 13." in configured.stdout, configured.stdout[-2000:]
    assert project.build() == {"gemm_maxplus_f32_forward", "alt_minplus_f32_forward"}
    toolkit = json.loads((project.stage / "index.json").read_text())["toolkit"]
    assert (toolkit["compiler"], toolkit["cuda_major"]) == ("nvrtc", 13)


def test_bad_override_fails_configure_in_one_line(project: Project) -> None:
    result = project.configure("-DAOTC_ARCHS=8.6")
    assert result.returncode != 0
    assert "aotc_add_kernel_library(mini): CMake variable AOTC_ARCHS='8.6': architecture '8.6' looks like a compute capability; write 86" in " ".join(result.stderr.split())


def test_a_bad_archs_argument_is_named_as_the_caller_wrote_it(project: Project) -> None:
    """The refusal opens with the function's name, then names its ARCHS argument
    (it said ``aotc_add_kernel_library(mini): aotc_add_kernel_library() argument='8.6'``)."""
    lists = project.root / "CMakeLists.txt"
    lists.write_text(lists.read_text().replace("MANIFEST kernels/manifest.yaml", "MANIFEST kernels/manifest.yaml ARCHS 8.6"))
    result = project.configure()
    assert result.returncode != 0
    assert "aotc_add_kernel_library(mini): ARCHS='8.6': architecture '8.6' looks like a compute capability; write 86" in " ".join(result.stderr.split())


def test_bad_manifest_fails_configure_naming_the_file(project: Project) -> None:
    project.manifest.write_text(project.manifest.read_text().replace("dtypes: [f32, i32]", "dtypes: [f32, f16]"))
    result = project.configure("-DAOTC_ARCHS=75")
    assert result.returncode != 0
    assert f"{project.manifest}:5: dtypes: unknown dtype 'f16'" in " ".join(result.stderr.split())


def test_build_commands_hold_no_path_of_the_environment(project: Project) -> None:
    """pip builds in a throwaway environment each time: if its Python, aotc or
    cmake appeared in a command, ninja would rerun that command every build."""
    assert project.configure("-DAOTC_ARCHS=75").returncode == 0
    ninja = (project.build_dir / "build.ninja").read_text()
    commands = [line for line in ninja.splitlines() if line.lstrip().startswith("COMMAND =")]
    aotc_commands = [c for c in commands if "aotc-compile" in c or "aotc-buildtool" in c]
    compiles = [c for c in aotc_commands if "aotc-compile" in c]
    # Both kernels are compiled, by one batched step or more (AOTC_COMPILE_BATCH).
    assert compiles and all(any(c.endswith(" " + k) or f" {k} " in c for c in compiles) for k in ("gemm_maxplus_f32_forward", "alt_minplus_f32_forward"))
    environment = {
        "Python": str(Path(sys.executable).parent),
        "aotc": str(Path(aotc.__file__).resolve().parents[1]),
        "cmake": str(Path(shutil.which("cmake") or "cmake").resolve().parent),
    }
    for command in aotc_commands:
        # The wrappers themselves live in the build directory; nothing else may be named.
        stripped = command.replace(str(project.build_dir), "<build>")
        for what, path in environment.items():
            assert path not in stripped, f"{what} path {path} in: {command.strip()}"
    wrapper = (project.build_dir / "aotc-tools" / "aotc-compile").read_text()
    assert sys.executable in wrapper  # the paths live in the wrapper instead


def test_no_step_puts_aotc_on_pythonpath_before_pips_sitecustomize(project: Project, tmp_path: Path) -> None:
    """pip's build environment keeps a sitecustomize on PYTHONPATH that asserts its
    own site-packages (where aotc is installed) are not on sys.path yet; aotc's
    steps once put aotc's folder there, and every step of every build printed
    "Error in sitecustomize; set PYTHONVERBOSE for traceback: AssertionError"."""
    root = str(Path(aotc.__file__).resolve().parents[1])
    site = tmp_path / "pip-site"
    site.mkdir()
    # The check is on PYTHONPATH itself: where aotc is installed in the
    # interpreter's own site-packages (tox's venv), site put that folder on
    # sys.path before any sitecustomize runs, and no step of aotc's did.
    (site / "sitecustomize.py").write_text(
        f"import os\nassert {root!r} not in os.environ.get('PYTHONPATH', '').split(os.pathsep), 'aotc put on PYTHONPATH'\n"
    )
    env = {"PYTHONPATH": str(site)}  # as pip's build environment: its own folder, not aotc's
    configured = project.configure("-DAOTC_ARCHS=75", env=env)
    assert configured.returncode == 0, configured.stderr
    assert "sitecustomize" not in configured.stdout + configured.stderr
    for tool in ("aotc-buildtool", "aotc-compile"):
        result = subprocess.run([str(project.build_dir / "aotc-tools" / tool), "--help"], capture_output=True, text=True, env={**aotc_env(), **env}, timeout=120)
        assert result.returncode == 0, result.stderr
        assert "sitecustomize" not in result.stdout + result.stderr
