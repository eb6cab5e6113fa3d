"""The build-time half of aotc: manifest -> kernel specs -> sources -> fatbins + index.

Nothing here is imported by the runtime or the tropical API (an import
contract checks it), so a pip-installed wheel never loads Jinja2 or PyYAML.
The CMake package in ``cmake/`` drives these modules through two wrapper
scripts; see docs/design.md for the tour.
"""

from __future__ import annotations

__all__: list[str] = []
