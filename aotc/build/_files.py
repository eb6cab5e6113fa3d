"""Writing build outputs so that an unchanged output keeps its timestamp.

Ninja re-stats outputs: a file rewritten with the same bytes would still look
new and recompile everything after it. Standard library only, since the
per-kernel compile step imports it (and aotc's untrusted-file reader, which is).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from aotc._untrusted_files import read_regular
from aotc.errors import UnreadableFileError

__all__ = ["write_if_changed"]


def write_if_changed(path: Path, data: bytes) -> bool:
    """Replace ``path`` atomically with ``data`` unless it already holds it; True if written."""
    try:
        # Through the untrusted-file reader: a FIFO or device planted here is
        # replaced below, never opened (a plain read of a FIFO blocks for good).
        if read_regular(path, len(data)) == data:
            return False
    except UnreadableFileError:
        pass
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        # mkstemp makes the file 0600; give it the mode open() would have.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return True
