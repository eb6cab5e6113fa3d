"""Where aotc's installed pieces live: the CMake package and the kernel libraries.

A library is found by name in one of two places, in this order:

- ``aotc/_lib/<name>``: the libraries installed with aotc itself (tropical),
  in any folder of the ``aotc`` package's path. An installed aotc has one;
  an editable install (``pip install -e .``) has two, the source tree and the
  folder in site-packages where its build installed the libraries;
- a package's entry point in the group ``aotc.libraries``, whose value names
  the package folder that holds the library's ``index.json``
  (``rowops = "rowops._kernels"`` in the package's ``pyproject.toml``, under
  ``[project.entry-points."aotc.libraries"]``). Only a name aotc does not
  hold itself reads the installed distributions' metadata, so loading the
  tropical library never imports ``importlib.metadata``; and what that read
  found is kept between processes until a distribution is installed or
  uninstalled on the import path (``aotc._entry_points``). The folder is found
  without importing the package: beside the distribution's files, or else
  where ``importlib.util.find_spec`` finds the top-level package (an
  editable install). Two packages declaring one name, and an entry point
  whose folder holds no index, are each refused in one line.

Paths are built with ``os.path``: loading a library must not import
``pathlib`` (with ``fnmatch``, ``urllib.parse`` and ``ipaddress``, some 4 ms);
the public functions return ``Path`` objects and import it when called.
"""

from __future__ import annotations

import os

from aotc.errors import LibraryNotFoundError, echo, listing

TYPE_CHECKING = False
if TYPE_CHECKING:
    from pathlib import Path

__all__ = [
    "ENTRY_POINT_GROUP", "cmake_dir", "declared_libraries", "find_library", "installed_libraries", "libraries_root",
    "library_dir", "library_folder", "module_path", "shadowed_declaration",
]  # fmt: skip

ENTRY_POINT_GROUP = "aotc.libraries"  # aotc._entry_points.GROUP
INDEX_NAME = "index.json"  # aotc.index.INDEX_NAME, without importing the index package

_PACKAGE_DIR = os.path.dirname(os.path.realpath(__file__))


def cmake_dir() -> Path:
    """The folder holding aotcConfig.cmake, for ``-Daotc_DIR=...``."""
    from pathlib import Path

    return Path(_PACKAGE_DIR, "build", "cmake")


def _library_roots() -> list[str]:
    """The ``_lib`` folders of aotc's package path, in import order: an editable
    install's build installs the libraries into site-packages, not the source
    tree this module is imported from (scikit-build-core's import redirect puts
    both folders on ``aotc.__path__``)."""
    import aotc  # this module's own package: imported already

    roots = []
    for folder in (*getattr(aotc, "__path__", ()), _PACKAGE_DIR):
        root = os.path.join(os.path.realpath(folder), "_lib")
        if root not in roots:
            roots.append(root)
    return roots


def libraries_root() -> Path:
    """The folder that kernel libraries are installed under (``aotc/_lib``):
    the first of the package's path that holds one."""
    from pathlib import Path

    roots = _library_roots()
    return Path(next((root for root in roots if os.path.isdir(root)), roots[0]))


def library_dir(name: str) -> Path:
    """The installed folder of one kernel library, holding its index.json."""
    from pathlib import Path

    return Path(library_folder(name))


def library_folder(name: str) -> str:
    """``library_dir(name)`` as a string, for the loader: the first folder of the
    package's path holding the library's index (else the path's first)."""
    roots = _library_roots()
    for root in roots:
        if os.path.isfile(os.path.join(root, name, INDEX_NAME)):
            return os.path.join(root, name)
    return os.path.join(roots[0], name)


def find_library(name: str) -> str:
    """The folder of the library installed as ``name``: aotc's own, else the one a
    package declares (see the module docstring); one line where there is none."""
    own = library_folder(name)
    if os.path.isfile(os.path.join(own, INDEX_NAME)):
        return own
    found = declared_library_folder(name)
    if found is None:
        known = listing(installed_libraries())
        msg = (
            f"no kernel library named {echo(name)}: aotc holds none, and no installed package declares one "
            f"({ENTRY_POINT_GROUP} entry points; installed libraries: {known}); or pass a library folder"
        )
        raise LibraryNotFoundError(msg)
    return found


def installed_libraries() -> list[str]:
    """The names of aotc's own libraries (``aotc/_lib``) and of those packages declare."""
    own = [n for root in _library_roots() if os.path.isdir(root) for n in os.listdir(root) if os.path.isfile(os.path.join(root, n, INDEX_NAME))]
    return sorted({*own, *declared_libraries()})


def shadowed_declaration(name: str) -> str:
    """Where a package declares a name that aotc's own library holds: the line
    saying that name loads aotc's (``aotc doctor`` reports it); else ""."""
    if not os.path.isfile(os.path.join(library_folder(name), INDEX_NAME)):
        return ""
    found = [who for declared, _, who, _ in _declared()[0] if declared == name]
    if not found:
        return ""
    return f"{', '.join(found)} declares it too ({ENTRY_POINT_GROUP} entry point), but the name loads aotc's own library; rename that entry point, or load its folder"


def declared_libraries() -> list[str]:
    """The names packages declare in the ``aotc.libraries`` entry-point group."""
    return sorted({name for name, _, _, _ in _declared()[0]})


def _declared() -> tuple[list[list[str]], list[str]]:
    """Every ``aotc.libraries`` entry point of the installed distributions
    (``[name, value, "distribution version", its .dist-info folder]``, the first
    of a name on the path, as importlib.metadata counts them), and the
    distributions whose entry points cannot be read, each named with why: one
    broken package must not hide every other package's library."""
    from aotc._entry_points import declarations

    return declarations()


def declared_library_folder(name: str) -> str | None:
    """The folder of the library a package declares as ``name``; None where none does."""
    declared, broken = _declared()
    found = [item for item in declared if item[0] == name]
    if not found:
        if broken:
            msg = f"no installed package declares a library {echo(name)}, and the entry points of {len(broken)} cannot be read: {listing(broken, '; ')}"
            raise LibraryNotFoundError(msg)
        return None
    if len({(who, value) for _, value, who, _ in found}) > 1:
        who = " and ".join(f"{who} ({echo(value)})" for _, value, who, _ in found)
        msg = f"library {echo(name)}: {len(found)} installed packages declare it ({ENTRY_POINT_GROUP} entry points): {who}; uninstall one, or load a folder"
        raise LibraryNotFoundError(msg)
    return _entry_point_folder(*found[0])


def module_path(value: str) -> list[str] | None:
    """An entry point's value as the parts of a dotted package path (``rowops._kernels``); None if it is not one."""
    parts = value.strip().split(".")
    return parts if all(part.isidentifier() for part in parts) else None


def _entry_point_folder(name: str, value: str, who: str, info: str) -> str:
    where = f"library {echo(name)}: {who} declares it as {echo(value)} ({ENTRY_POINT_GROUP} entry point)"
    parts = module_path(value)
    if parts is None:
        msg = f"{where}, which is not a package folder; write it as package.folder, e.g. rowops._kernels"
        raise LibraryNotFoundError(msg)
    # Beside the distribution's files (its .dist-info's folder), as pip installs them.
    candidates = [os.path.join(os.path.dirname(info), *parts)] if info else []
    import importlib.util  # an editable install: where the top-level package is found, without importing it

    try:
        spec = importlib.util.find_spec(parts[0])
    except (ImportError, ValueError):
        spec = None
    locations = list(spec.submodule_search_locations or ()) if spec is not None else []
    candidates.extend(os.path.join(location, *parts[1:]) for location in locations)
    for folder in candidates:
        if os.path.isfile(os.path.join(folder, INDEX_NAME)):
            return os.path.realpath(folder)
    tried = ", ".join(candidates) or f"package {parts[0]!r} is not installed"
    msg = f"{where}, but no {INDEX_NAME} is there ({tried}); reinstall that package"
    raise LibraryNotFoundError(msg)
