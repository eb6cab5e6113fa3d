"""Arrays users pass in, seen uniformly: what they are (``operands``; one
adapter per library that makes them in ``kinds``, and ``dlpack`` for arrays
that speak only DLPack), where they live and which stream a call runs on
(``placement``), their memory as a kernel reaches it (``memory``), the
streams a call orders itself after (``streams``), and whether an eager tensor
call may skip PyTorch's dispatcher (``torch_direct``, imported only where
PyTorch already is).

The layer below the generic bindings (``aotc.kernels``), and above the
runtime. Nothing is imported here: the modules load with their users, and
none imports NumPy or PyTorch at import, so ``import aotc.tropical`` stays lean.
"""
