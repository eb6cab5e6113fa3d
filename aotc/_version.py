from __future__ import annotations

__all__ = ["__version__"]

# The single place the version lives; pyproject.toml reads it from here.
__version__ = "0.1.0"
