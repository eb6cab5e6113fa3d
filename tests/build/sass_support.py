"""The SASS tools (cuobjdump, nvdisasm) for the tests that read shipped SASS."""

from __future__ import annotations

import os

import pytest

from aotc.build import sass as _sass

__all__ = ["sass_tools"]


def sass_tools() -> _sass.Tools:
    """cuobjdump and nvdisasm; skips, saying why, where they are missing, and
    fails instead under tox (AOTC_REQUIRE_INSTALLED=1), whose test extra installs them."""
    tools = _sass.find_tools()
    if isinstance(tools, str):
        if os.environ.get("AOTC_REQUIRE_INSTALLED") == "1":
            pytest.fail(f"{tools} (the test extra installs it)")
        pytest.skip(tools)
    return tools
