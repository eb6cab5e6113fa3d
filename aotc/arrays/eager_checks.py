"""The checks that say a PyTorch call is plain eager, named without importing PyTorch.

``torch_direct`` runs them; the generated entries (``aotc.kernels._entry``)
inline them, a call level less on the hottest path, under the names here.
An entry is written before PyTorch may be imported (``import torch`` after
a first NumPy call), so its source is written from this table, and the
functions are bound into its namespace once PyTorch is there
(``functions``).
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

__all__ = ["EAGER_TEXT", "functions"]

# The name generated code calls each check by, and PyTorch's function as an
# attribute path from ``torch``: no public API asks the dispatcher these, so
# its private bindings are read. Dynamo folds only the first, so it comes first.
_WHOLE_CALL = {
    "_aotc_compiling": "compiler.is_compiling",
    "_aotc_dispatch_modes": "_C._len_torch_dispatch_stack",  # FakeTensorMode, make_fx's proxy mode, ...
    "_aotc_function_modes": "_C._is_torch_function_mode_enabled",
    "_aotc_transforms": "_C._are_functorch_transforms_active",  # vmap, grad, functionalize
    "_aotc_autocast": "_C._is_any_autocast_enabled",
    "_aotc_inference": "is_inference_mode_enabled",
}
_OTHERS = {
    "_aotc_tracing": "_C._get_tracing_state",  # torch.jit.trace: None when not tracing
    "_aotc_wrapped": "_C._functorch.is_functorch_wrapped_tensor",  # per tensor
}
EAGER_TEXT = " and ".join(f"not {name}()" for name in _WHOLE_CALL) + " and _aotc_tracing() is None"


def functions(torch: Any) -> dict[str, Callable[..., Any]]:
    """Each name of the table bound to ``torch``'s function."""
    found = {}
    for name, path in (_WHOLE_CALL | _OTHERS).items():
        value = torch
        for part in path.split("."):
            value = getattr(value, part)
        found[name] = value
    return found
