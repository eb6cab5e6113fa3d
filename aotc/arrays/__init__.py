"""Arrays users pass in, seen uniformly: what they are (``operands``, and
``dlpack`` for arrays that speak only DLPack), where they live and which
stream a call runs on (``placement``), their memory as a kernel reaches it
(``memory``), the streams a call orders itself after (``streams``,
``framework_streams``), and whether an eager tensor call may skip PyTorch's
dispatcher (``torch_direct``, imported only where PyTorch already is).

Shared by the tropical API (``aotc.tropical``) and the generic kernel
bindings; it sits above the runtime and below both. Nothing is imported here:
the modules load with their users, and none imports NumPy or PyTorch at
import, so ``import aotc.tropical`` stays lean.
"""
