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

from aotc._generated import compiled
from aotc.arrays.eager_checks import EAGER_TEXT, functions

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["EAGER_CHECKS", "direct_all"]

_Tensor = torch.Tensor
# The checks that hold for the whole call, and the per-tensor one, by the
# names the generated entries inline them under (aotc.arrays.eager_checks).
EAGER_CHECKS = functions(torch)
_wrapped = EAGER_CHECKS["_aotc_wrapped"]
_eager = compiled(f"def _aotc_eager():\n    return {EAGER_TEXT}\n", "_aotc_eager", "eager checks", dict(EAGER_CHECKS))


def direct_all(tensors: tuple[Any, ...]) -> bool:
    """Whether an eager call on ``tensors`` (its in arrays) that autograd does
    not record may run the op's kernel directly."""
    if not _eager():  # first: under dynamo it folds to False
        return False
    for t in tensors:
        if type(t) is not _Tensor:
            return False
    return not any(t.is_meta or _wrapped(t) for t in tensors)
