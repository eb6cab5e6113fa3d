"""``aotc.load()``: a kernel library that reads its index at load and each kernel at first use.

Loading reads ``index.json`` and nothing else. The first kernel loaded
checks, once per library, that the backend's driver is new enough for the
toolkit the index names (``aotc.runtime.driver``). The first use of a kernel
chooses its image (``select_image`` against the device), opens only that
kernel's fatbin (or compiles only its source with NVRTC, through the disk
cache), loads it through the backend and keeps a Launcher. Every later use is
a dict lookup.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aotc._locations import libraries_root, library_dir
from aotc.errors import (
    DamagedLibraryError,
    DriverTooOldError,
    IndexFormatError,
    LibraryNotFoundError,
    UnknownKernelError,
    UnreadableFileError,
)
from aotc.index import INDEX_NAME, load_index_file
from aotc.runtime.backends import Backend, get_backend
from aotc.runtime.cache import DiskCache
from aotc.runtime.files import KERNEL_FILE_LIMIT, read_regular
from aotc.runtime.driver import Toolkit, check_driver, toolkit_from_index
from aotc.runtime.launcher import KernelSignature, Launcher
from aotc.runtime.select import (
    ImageChoice,
    ImageKind,
    JitPolicy,
    KernelImages,
    Platform,
    explain_selection,
    jit_policy_from_env,
    select_image,
)

if TYPE_CHECKING:  # imported on first use of Library.tropical: it brings the array handling
    from aotc.tropical import Tropical

__all__ = ["Library", "installed_libraries", "kernel_images", "load", "resolve_library", "toolkit_version"]


def resolve_library(library: str | os.PathLike[str]) -> Path:
    """The folder of ``library``: an installed library's name, a folder, or an index.json path."""
    text = os.fspath(library)
    looks_like_path = isinstance(library, os.PathLike) or os.sep in text or "/" in text or text.startswith(".")
    if looks_like_path or (Path(text) / INDEX_NAME).is_file():
        path = Path(text).expanduser().resolve()
        return path.parent if path.name == INDEX_NAME and path.is_file() else path
    return library_dir(text)


def installed_libraries() -> list[str]:
    """Names of the kernel libraries installed with aotc."""
    root = libraries_root()
    if not root.is_dir():
        return []
    return sorted(p.name for p in root.iterdir() if (p / INDEX_NAME).is_file())


def toolkit_version(index: Mapping[str, Any], where: str) -> tuple[int, int]:
    """(major, minor) of the toolkit (nvcc or NVRTC) that wrote the index's PTX."""
    toolkit = index.get("toolkit")
    # Indexes before the toolkit table named only nvcc's version.
    text = str(toolkit.get("version", "") if isinstance(toolkit, Mapping) else index.get("nvcc_version", ""))
    parts = text.split(".")
    if len(parts) < 2 or not parts[0].isdigit() or not parts[1].isdigit():
        msg = f"{where}: toolkit version {text!r} is not a version like '13.0.88'"
        raise IndexFormatError(msg)
    return int(parts[0]), int(parts[1])


def kernel_images(index: Mapping[str, Any], name: str, where: str) -> KernelImages:
    """What ``select_image`` needs to know about one kernel of ``index``."""
    entry = index["kernels"][name]
    try:
        return KernelImages(tuple(entry["sass"]), tuple(entry["ptx"]), toolkit_version(index, where), name=name)
    except (KeyError, TypeError) as exc:
        msg = f"{where}: kernel {name!r} has no valid sass/ptx lists ({exc})"
        raise IndexFormatError(msg) from None


class Library:
    """One kernel library; see the module docstring. Thread-safe."""

    def __init__(
        self,
        directory: str | os.PathLike[str],
        *,
        backend: Backend | str | None = None,
        cache: DiskCache | None = None,
    ) -> None:
        self.directory = Path(directory)
        index_path = self.directory / INDEX_NAME
        if not index_path.is_file():
            known = ", ".join(installed_libraries()) or "none"
            msg = f"no kernel library at {self.directory} ({INDEX_NAME} not found; installed libraries: {known})"
            raise LibraryNotFoundError(msg)
        self.index: dict[str, Any] = load_index_file(index_path)
        self._where = str(index_path)
        self.name: str = str(self.index.get("library", self.directory.name))
        # None for indexes written before the build recorded its toolkit: no driver check.
        self.toolkit: Toolkit | None = toolkit_from_index(self.index, self._where)
        self._driver_checked = self.toolkit is None
        self._driver_problem: str | None = None
        self._backend_spec = backend
        self._backend: Backend | None = backend if not isinstance(backend, (str, type(None))) else None
        self._cache = cache
        self._mutex = threading.Lock()
        self._kernel_locks: dict[str, threading.Lock] = {}
        self._launchers: dict[str, Launcher] = {}
        self._platforms: dict[bool, Platform] = {}
        # (semiring, dtype, pass, variant) -> name, from the index alone
        self._by_kind: dict[tuple[str, str, str, str], str] = {}
        for kernel, entry in self.index["kernels"].items():
            key = (entry.get("semiring"), entry.get("dtype"), entry.get("pass"), entry.get("variant", "single"))
            self._by_kind[key] = kernel  # type: ignore[index]
        self._launchers_by_kind: dict[tuple[str, str, str, str], Launcher] = {}
        self._tropical: Tropical | None = None

    def __repr__(self) -> str:
        return f"<aotc.Library {self.name!r} at {self.directory}: {len(self)} kernels, {len(self._launchers)} loaded>"

    def __len__(self) -> int:
        return len(self.index["kernels"])

    def __iter__(self) -> Iterator[str]:
        return iter(self.index["kernels"])

    def __contains__(self, name: object) -> bool:
        return name in self.index["kernels"]

    @property
    def loaded(self) -> tuple[str, ...]:
        """Names of the kernels prepared so far, in load order."""
        return tuple(self._launchers)

    @property
    def backend(self) -> Backend:
        """The backend this library launches through (imported on first access)."""
        backend = self._backend
        if backend is None:
            with self._mutex:
                if self._backend is None:
                    spec = self._backend_spec
                    self._backend = get_backend(spec if isinstance(spec, str) else None)
                backend = self._backend
        return backend

    @property
    def tropical(self) -> Tropical:
        """The ``aotc.tropical`` functions over this library's kernels, leaving the
        module's default library alone: ``aotc.load(folder).tropical.matmul(a, b, "maxmin")``."""
        api = self._tropical
        if api is None:
            from aotc.tropical import Tropical

            with self._mutex:
                if self._tropical is None:
                    self._tropical = Tropical(self)
                api = self._tropical
        return api

    # -- the per-call surface ------------------------------------------------

    def kernel(self, name: str) -> Launcher:
        """The launcher of kernel ``name``, loading it on first use."""
        launcher = self._launchers.get(name)
        if launcher is None:
            launcher = self._load(name)
        return launcher

    __getitem__ = kernel

    def find(self, semiring: str, dtype: str, pass_: str = "forward", variant: str = "single") -> Launcher:
        """The launcher of the kernel for this (semiring, dtype, pass, variant)."""
        key = (semiring, dtype, pass_, variant)
        launcher = self._launchers_by_kind.get(key)
        if launcher is None:
            name = self._by_kind.get(key)
            if name is None:
                msg = f"library {self.name!r} has no kernel for semiring={semiring}, dtype={dtype}, pass={pass_}, variant={variant}"
                raise UnknownKernelError(msg)
            launcher = self._launchers_by_kind[key] = self.kernel(name)
        return launcher

    def launch(self, name: str, *args: int, stream: Any = 0) -> None:
        """``lib.kernel(name)(*args, stream=stream)``."""
        launcher = self._launchers.get(name)
        if launcher is None:
            launcher = self._load(name)
        launcher(*args, stream=stream)

    # -- what doctor and tools ask -------------------------------------------

    def platform(self, *, with_nvrtc: bool = True) -> Platform:
        """The device in hand, as ``select_image`` sees it."""
        platform = self._platforms.get(with_nvrtc)
        if platform is None:
            device = self.backend.device()
            archs = None
            if with_nvrtc:
                from aotc.runtime.jit import nvrtc_info

                info = nvrtc_info()
                archs = info.archs if info is not None else None
            platform = self._platforms[with_nvrtc] = Platform(device.capability, device.driver_version, archs)
        return platform

    def images(self, name: str) -> KernelImages:
        self._entry(name)
        return kernel_images(self.index, name, self._where)

    def choose(self, name: str, policy: JitPolicy | str | None = None) -> ImageChoice:
        """The image ``select_image`` picks for ``name`` on this device; raises if none fits."""
        policy = jit_policy_from_env(os.environ) if policy is None else JitPolicy(policy)
        images = self.images(name)
        # NVRTC is only consulted when no SASS fits, so a supported GPU never loads libnvrtc.
        choice = explain_selection(images, self.platform(with_nvrtc=False), policy)
        if choice.kind in (ImageKind.SASS_EXACT, ImageKind.SASS_COMPATIBLE):
            return choice
        return select_image(images, self.platform(with_nvrtc=True), policy)

    def check_driver(self) -> None:
        """Raise DriverTooOldError if the backend's driver is older than this library's
        toolkit needs. Asked of the backend once; the first kernel load calls it."""
        if not self._driver_checked:
            try:
                check_driver(self.toolkit, self.backend.driver_version(), library=self.name)
            except DriverTooOldError as exc:
                self._driver_problem = str(exc)
            self._driver_checked = True  # a race checks twice, with the same answer
        if self._driver_problem is not None:
            raise DriverTooOldError(self._driver_problem)

    # -- first use -------------------------------------------------------------

    def _entry(self, name: str) -> Mapping[str, Any]:
        try:
            return self.index["kernels"][name]
        except KeyError:
            close = [k for k in self.index["kernels"] if name in k or k in name][:5]
            hint = f" (did you mean: {', '.join(close)})" if close else ""
            msg = f"library {self.name!r} has no kernel {name!r}{hint}"
            raise UnknownKernelError(msg) from None

    def _load(self, name: str) -> Launcher:
        entry = self._entry(name)
        with self._mutex:
            lock = self._kernel_locks.setdefault(name, threading.Lock())
        with lock:
            launcher = self._launchers.get(name)
            if launcher is None:
                launcher = self._launchers[name] = self._prepare(name, entry)
        return launcher

    def _prepare(self, name: str, entry: Mapping[str, Any]) -> Launcher:
        signature = KernelSignature.from_index(name, entry, self._where)
        # Before any image is chosen or loaded: an old driver would otherwise fail
        # in cuModuleLoadData with an error that names neither it nor the fix.
        self.check_driver()
        backend = self.backend
        if backend.image_format == "source":
            # The emulator compiles the shipped .cu itself; no GPU image applies.
            source = self._read_checked(name, entry, "source")
            module = backend.load_module(source, name=name, symbols=(signature.symbol,))
            choice, image = None, f"{entry['source']['file']} built by the {backend.name} backend"
        else:
            choice = self.choose(name)
            if choice.kind is ImageKind.NVRTC_JIT:
                from aotc.runtime.jit import jit_cubin

                source = self._read_checked(name, entry, "source")
                capability = self.platform().capability
                result = jit_cubin(source, entry["source"]["file"], capability, self._cache)
                data = result.cubin
                how = "compiled now" if result.compiled else "from the disk cache"
                image = f"NVRTC cubin for sm_{choice.arch} ({how})"
            else:
                data = self._read_checked(name, entry, "fatbin")
                image = f"{entry['fatbin']['file']}: {choice.kind.value} {choice.arch}"
            module = backend.load_module(data, name=name, symbols=(signature.symbol,))
        function = backend.get_function(module, signature.symbol)
        return Launcher(signature, backend, module, function, choice=choice, image=image)

    def _read_checked(self, name: str, entry: Mapping[str, Any], part: str) -> bytes:
        """One file of the kernel, verified against the index (once: the launcher is kept)."""
        try:
            file = entry[part]["file"]
            expected = entry[part]["sha256"]
        except (KeyError, TypeError):
            msg = f"{self._where}: kernel {name!r} has no {part} file entry"
            raise IndexFormatError(msg) from None
        path = self.directory / file
        try:
            data = read_regular(path, KERNEL_FILE_LIMIT)
        except UnreadableFileError as exc:
            msg = f"{exc} (the {part} of kernel {name!r})"
            raise DamagedLibraryError(msg) from None
        if hashlib.sha256(data).hexdigest() != expected:
            msg = f"{path}: sha256 does not match {INDEX_NAME}; the library is damaged (reinstall it)"
            raise DamagedLibraryError(msg)
        return data


_loaded: dict[tuple[Path, int, int], Library] = {}
_loaded_lock = threading.Lock()


def load(
    library: str | os.PathLike[str] = "tropical",
    *,
    backend: Backend | str | None = None,
    cache: DiskCache | None = None,
) -> Library:
    """Open a kernel library by installed name or folder; reads only its index.json.

    With the default backend and cache, loading the same unchanged library
    again returns the same Library, with its kernels already loaded.
    """
    directory = resolve_library(library)
    if backend is not None or cache is not None:
        return Library(directory, backend=backend, cache=cache)
    try:
        st = (directory / INDEX_NAME).stat()
    except OSError:
        return Library(directory)  # raises the one-line error
    key = (directory, st.st_mtime_ns, st.st_size)
    with _loaded_lock:
        found = _loaded.get(key)
        if found is None:
            found = _loaded[key] = Library(directory)
        return found
