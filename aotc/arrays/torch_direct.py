"""Whether an eager tensor call may skip PyTorch's dispatcher and run the op's kernel itself.

The custom ops (a declared layout's ``<library>::<layout>``, tropical's
``tropical::gemm_forward`` among them) are what torch.compile, FakeTensorMode,
torch.func, autocast, subclasses and autograd see. In a plain eager call none
of them is there, and the dispatcher only hands the call to the op's kernel,
a Python function, at some 3 us a call (RESULTS.md). ``direct`` says when
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

__all__ = [
    "autocast", "direct", "direct_all", "dispatch_modes", "function_modes", "inference", "tracing", "transforms",
]  # fmt: skip

# PyTorch's own answers to "is anything but a plain eager call going on": no
# public API asks the dispatcher these, so its private bindings are read once.
_C = torch._C  # noqa: SLF001 - the dispatcher's own state
_functorch = _C._functorch  # noqa: SLF001
_Tensor = torch.Tensor
_compiling = torch.compiler.is_compiling
# Public: PyTorch's own answers, one by one.
inference = torch.is_inference_mode_enabled
dispatch_modes = _C._len_torch_dispatch_stack  # noqa: SLF001 - FakeTensorMode, make_fx's proxy mode, ...
function_modes = _C._is_torch_function_mode_enabled  # noqa: SLF001
transforms = _C._are_functorch_transforms_active  # noqa: SLF001 - vmap, grad, functionalize
autocast = _C._is_any_autocast_enabled  # noqa: SLF001
tracing = _C._get_tracing_state  # noqa: SLF001 - torch.jit.trace
_wrapped = _functorch.is_functorch_wrapped_tensor


def direct(a: Any, b: Any, c: Any = None, d: Any = None) -> bool:
    """Whether an eager call on tensors ``a``, ``b`` (and ``c``, ``d`` where not
    None) that autograd does not record may run the op's kernel directly; about
    0.5 us of checks."""
    if _compiling():  # first: dynamo traces this function, and can only fold this one
        return False
    if type(a) is not _Tensor or type(b) is not _Tensor:
        return False
    if (c is not None and type(c) is not _Tensor) or (d is not None and type(d) is not _Tensor):
        return False
    if dispatch_modes() or function_modes() or transforms() or autocast() or inference():
        return False
    if tracing() is not None:
        return False
    for t in (a, b, c, d):
        if t is not None and (t.is_meta or _wrapped(t)):
            return False
    return True


def direct_all(tensors: tuple[Any, ...]) -> bool:
    """``direct`` for any number of tensors (a declared family's in arrays)."""
    if _compiling():
        return False
    for t in tensors:
        if type(t) is not _Tensor:
            return False
    if dispatch_modes() or function_modes() or transforms() or autocast() or inference():
        return False
    if tracing() is not None:
        return False
    return not any(t.is_meta or _wrapped(t) for t in tensors)
