"""Whether an eager tensor call may skip PyTorch's dispatcher and run the op's kernel itself.

The custom ops (a declared layout's ``<library>::<layout>``, tropical's
``tropical::gemm_forward`` among them) are what torch.compile, FakeTensorMode,
torch.func, autocast, subclasses and autograd see. In a plain eager call none
of them is there, and the dispatcher only hands the call to the op's kernel,
a Python function, at some 3 us a call (RESULTS.md). ``direct_all`` says when
that is so: every operand a plain ``torch.Tensor`` (no subclass, FakeTensor
included; no functorch wrapper; not on the meta device), no TorchDispatchMode
or TorchFunctionMode active, no torch.func transform, not traced
(torch.jit.trace) or compiled (dynamo), autocast off, and not in inference
mode. The caller checks the last condition, that autograd does not record.
Anything else goes through the ops as before.
"""

from __future__ import annotations

import torch

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["EAGER_CHECKS", "EAGER_TEXT", "direct_all"]

# PyTorch's own answers to "is anything but a plain eager call going on": no
# public API asks the dispatcher these, so its private bindings are read once.
_C = torch._C  # noqa: SLF001 - the dispatcher's own state
_Tensor = torch.Tensor
_wrapped = _C._functorch.is_functorch_wrapped_tensor  # noqa: SLF001
# The checks that hold for the whole call, by the names the generated entries
# (aotc.kernels._entry) inline them under, a call level less on the hottest
# path; dynamo folds only the first, so it comes first.
EAGER_CHECKS = {
    "_aotc_compiling": torch.compiler.is_compiling,
    "_aotc_dispatch_modes": _C._len_torch_dispatch_stack,  # noqa: SLF001 - FakeTensorMode, make_fx's proxy mode, ...
    "_aotc_function_modes": _C._is_torch_function_mode_enabled,  # noqa: SLF001
    "_aotc_transforms": _C._are_functorch_transforms_active,  # noqa: SLF001 - vmap, grad, functionalize
    "_aotc_autocast": _C._is_any_autocast_enabled,  # noqa: SLF001
    "_aotc_inference": torch.is_inference_mode_enabled,
}
EAGER_TEXT = " and ".join(f"not {name}()" for name in EAGER_CHECKS) + " and _aotc_tracing() is None"
EAGER_CHECKS["_aotc_tracing"] = _C._get_tracing_state  # noqa: SLF001 - torch.jit.trace
EAGER_CHECKS["_aotc_wrapped"] = _wrapped
_eager = eval(f"lambda: {EAGER_TEXT}", dict(EAGER_CHECKS))


def direct_all(tensors: tuple[Any, ...]) -> bool:
    """Whether an eager call on ``tensors`` (its in arrays) that autograd does
    not record may run the op's kernel directly."""
    if not _eager():  # first: under dynamo it folds to False
        return False
    for t in tensors:
        if type(t) is not _Tensor:
            return False
    return not any(t.is_meta or _wrapped(t) for t in tensors)
