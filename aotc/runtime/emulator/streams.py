"""The emulator's streams and events: work is queued now and runs later, in stream order.

A GPU returns from a launch, a memset or an async copy at once and runs the
work later, each stream in its order. Code that forgets to order two streams,
or reads a result before synchronizing, is wrong there even when a synchronous
CPU run gives the right answer. So the emulator queues the same way:

- every stream is a FIFO of operations; nothing runs when it is enqueued;
- work runs only when the host waits for it: a stream, event or context
  synchronize, a synchronous copy to the host, a free;
- the legacy default stream (handle 0, or ``CU_STREAM_LEGACY`` = 1) waits for
  all earlier work of the device's blocking streams, and blocking streams wait
  for the legacy stream's earlier work; non-blocking streams order themselves
  against neither, as ``CU_STREAM_NON_BLOCKING`` streams on a GPU;
- an event recorded on a stream completes when the work before it has run;
  a stream that waits on it runs nothing after the wait until then.

Which work runs when the host waits, and in which order, is the schedule:
``AOTC_EMULATOR_SCHEDULE``, read at every wait:

- ``lazy`` (default): only the work the wait needs (the waited-for stream's
  earlier work, and what that work waits for, through events and the legacy
  stream's rules), the most recently enqueued ready operation first. Work
  that was not ordered before the wait has not run: every missing wait
  between two streams shows, on every run.
- ``in-order``: all ready work of every stream, the earliest enqueued first,
  as work usually lands on a GPU.
- ``seed:N``: all ready work of every stream, a ready operation drawn at
  random from a generator seeded with N (a whole number) when the value is
  first read: a random delay per operation, the same on every run with the
  same N. Unordered work then also runs *between* a producer and its reader,
  which ``lazy`` never shows (a late fill clobbering a result).

``AOTC_EMULATOR_STREAMS=sync`` runs each operation when it is enqueued (after
all before it): the emulator as it was before streams were modelled.

An operation that fails (a kernel fault) is reported by the next wait on its
device, once, as a BackendError naming the operation: the driver's sticky
asynchronous error.

Stream and event handles are ints, as the driver's are, and each belongs to
one device: using one on another device's backend is an error, as on a GPU.
"""

from __future__ import annotations

import collections
import itertools
import os
import random
import threading
from collections.abc import Callable
from typing import Any

from aotc.errors import BackendError, ConfigurationError, KernelFaultError, echo

__all__ = [
    "LEGACY_HANDLES",
    "Event",
    "Operation",
    "Stream",
    "create_event",
    "create_stream",
    "destroy_event",
    "destroy_stream",
    "enqueue",
    "event",
    "record",
    "stream",
    "synchronize_device",
    "synchronous",
    "wait",
    "wait_event",
]

LEGACY_HANDLES = (0, 1)  # 0: the default stream; 1: CU_STREAM_LEGACY, the same stream named explicitly
_PER_THREAD = 2  # CU_STREAM_PER_THREAD: not modelled

_lock = threading.RLock()
_progress = threading.Condition(_lock)  # notified when an operation finishes
_running = 0  # operations running now, in any thread
_sequence = itertools.count(1)
_handles = itertools.count(0x5EA0_0000, 0x10)  # look like the pointers a driver hands out
_streams: dict[int, Stream] = {}
_events: dict[int, Event] = {}
_legacy: dict[int, Stream] = {}  # device -> its legacy default stream
_faults: dict[int, BaseException] = {}  # device -> the first unreported failure of its work
_schedule: dict[str, Any] = {}  # the schedule's text -> its chooser, so a seed's generator persists
_retired: list[Stream] = []  # destroyed streams whose queued work has not run yet


class Operation:
    """One piece of queued work: it runs after its stream's earlier work and after ``after``."""

    __slots__ = ("after", "done", "run", "running", "sequence", "started", "stream", "what")

    def __init__(self, stream: Stream, run: Callable[[], None] | None, after: list[Operation], what: str) -> None:
        self.stream = stream
        self.run = run  # None: a marker (an event record, a wait) that runs nothing
        self.after = after
        self.what = what
        self.done = False
        self.running = False  # it stays its stream's head until done: the next waits
        self.started = False  # claimed and begun: an interrupt after this leaves it done
        self.sequence = next(_sequence)

    def ready(self) -> bool:
        return all(o.done for o in self.after)


class Stream:
    """One emulated stream of one device."""

    __slots__ = ("device", "handle", "last", "non_blocking", "queue")

    def __init__(self, handle: int, device: int, non_blocking: bool) -> None:
        self.handle = handle
        self.device = device
        self.non_blocking = non_blocking
        self.queue: collections.deque[Operation] = collections.deque()
        self.last: Operation | None = None  # the latest operation enqueued, run or not

    @property
    def legacy(self) -> bool:
        return _legacy.get(self.device) is self

    def __repr__(self) -> str:
        kind = "legacy" if self.legacy else "non-blocking" if self.non_blocking else "blocking"
        return f"<emulated {kind} stream {self.handle:#x} of device {self.device}>"


class Event:
    """An event: complete once the operation its last record marked has run."""

    __slots__ = ("device", "handle", "marker")

    def __init__(self, handle: int, device: int) -> None:
        self.handle = handle
        self.device = device
        self.marker: Operation | None = None  # None: never recorded, which counts as complete


def synchronous() -> bool:
    """Whether ``AOTC_EMULATOR_STREAMS=sync`` turns queueing off."""
    text = os.environ.get("AOTC_EMULATOR_STREAMS", "async").strip() or "async"
    if text not in ("async", "sync"):
        msg = f"AOTC_EMULATOR_STREAMS={echo(text)}: expected async (the default) or sync"
        raise ConfigurationError(msg)
    return text == "sync"


# --- handles ----------------------------------------------------------------------


def create_stream(device: int, non_blocking: bool = False) -> int:
    """A new stream of ``device`` (``cuStreamCreate``); its handle."""
    with _lock:
        handle = next(_handles)
        _streams[handle] = Stream(handle, device, non_blocking)
        return handle


def destroy_stream(handle: int, device: int) -> None:
    """``cuStreamDestroy``: the stream's queued work still runs; the handle is gone."""
    with _lock:
        if handle in LEGACY_HANDLES:
            msg = f"emulator: the legacy default stream of device {device} cannot be destroyed"
            raise BackendError(msg)
        stream(handle, device)
        gone = _streams.pop(handle)
        if gone.queue:
            _retired.append(gone)  # its queued work still runs


def stream(handle: Any, device: int) -> Stream:
    """The stream ``handle`` names on ``device``; one line if it names none there."""
    if handle is None:
        handle = 0  # None is the default stream, as cuLaunchKernel and pycuda take it
    elif type(handle) is not int:
        handle = getattr(handle, "handle", handle)  # a stream object of this module's users
    with _lock:
        if handle in LEGACY_HANDLES:
            legacy = _legacy.get(device)
            if legacy is None:
                legacy = _legacy[device] = Stream(0, device, non_blocking=False)
            return legacy
        found = _streams.get(handle) if type(handle) is int else None
    if found is None:
        what = "the per-thread default stream (2) is not modelled" if handle == _PER_THREAD else "no such stream"
        msg = f"emulator: stream {echo(handle)} on device {device}: {what} (CUDA_ERROR_INVALID_HANDLE)"
        raise BackendError(msg, cuda_error="CUDA_ERROR_INVALID_HANDLE")
    if found.device != device:
        msg = f"emulator: stream {handle:#x} belongs to device {found.device}, used on device {device} (CUDA_ERROR_INVALID_HANDLE)"
        raise BackendError(msg, cuda_error="CUDA_ERROR_INVALID_HANDLE")
    return found


def create_event(device: int) -> int:
    with _lock:
        handle = next(_handles)
        _events[handle] = Event(handle, device)
        return handle


def destroy_event(handle: int, device: int) -> None:
    with _lock:
        event(handle, device)
        del _events[handle]


def event(handle: Any, device: int) -> Event:
    with _lock:
        found = _events.get(handle) if type(handle) is int else None
    if found is None:
        msg = f"emulator: event {echo(handle)} on device {device}: no such event (CUDA_ERROR_INVALID_HANDLE)"
        raise BackendError(msg, cuda_error="CUDA_ERROR_INVALID_HANDLE")
    if found.device != device:
        msg = f"emulator: event {handle:#x} belongs to device {found.device}, used on device {device} (CUDA_ERROR_INVALID_HANDLE)"
        raise BackendError(msg, cuda_error="CUDA_ERROR_INVALID_HANDLE")
    return found


# --- queueing ---------------------------------------------------------------------


def enqueue(target: Stream, run: Callable[[], None] | None, what: str, after: tuple[Operation, ...] = ()) -> Operation:
    """Queue ``run`` on ``target`` behind its earlier work and the implicit waits of
    the legacy stream; with ``AOTC_EMULATOR_STREAMS=sync``, run it now."""
    with _lock:
        before = [o for o in (*_implicit_waits(target), *after) if o is not None and not o.done]
        operation = Operation(target, run, before, what)
        target.queue.append(operation)
        target.last = operation
    if synchronous():
        _run_until(operation, raise_now=True)
    return operation


def _implicit_waits(target: Stream) -> list[Operation | None]:
    """The legacy stream waits for the device's blocking streams, and they for it."""
    legacy = _legacy.get(target.device)
    if target is legacy:
        return [s.last for s in _streams.values() if s.device == target.device and not s.non_blocking]
    if target.non_blocking or legacy is None:
        return []
    return [legacy.last]


def record(marked: Event, target: Stream) -> None:
    """``cuEventRecord``: the event completes when ``target``'s work so far has run."""
    marked.marker = enqueue(target, None, f"event record on stream {target.handle:#x}")


def wait_event(target: Stream, awaited: Event) -> None:
    """``cuStreamWaitEvent``: ``target``'s later work runs after the event completes."""
    marker = awaited.marker
    enqueue(target, None, f"wait for event {awaited.handle:#x}", after=(marker,) if marker is not None else ())


def wait(operation: Operation | None, device: int) -> None:
    """Run work until ``operation`` has run (None: nothing to wait for), then report
    the first failure of the device's work since the last report."""
    if operation is not None:
        _run_until(operation, raise_now=False)
    _report(device)


def synchronize_device(device: int, *, report: bool = True) -> None:
    """``cuCtxSynchronize``: run all of ``device``'s queued work; then report its
    first failure, unless ``report`` is False (a free: the next wait reports it)."""
    with _lock:
        lasts = [s.last for s in (*_streams.values(), *_legacy.values(), *_draining()) if s.device == device]
    for last in lasts:
        if last is not None:
            _run_until(last, raise_now=False)
    if report:
        _report(device)


def _report(device: int) -> None:
    fault = _faults.pop(device, None)
    if fault is not None:
        raise fault


def _run_until(target: Operation, *, raise_now: bool) -> None:
    """Run ready operations, picked by the schedule, until ``target`` has run."""
    chooser, lazy = _chooser()
    with _lock:
        needed = _needed(target) if lazy else None
    global _running  # noqa: PLW0603 - one count for the process, under _lock
    while True:
        claimed: Operation | None = None
        failure: BaseException | None = None
        # A KeyboardInterrupt may land at any statement: what this thread claimed
        # is released in the finally (done once begun, else back at its stream's
        # head, unrun), or every later wait would find it running forever.
        try:
            with _lock:
                if target.done:
                    return
                if needed is not None:
                    heads = [s.queue[0] for s, upto in needed.items() if s.queue and s.queue[0].sequence <= upto]
                else:
                    heads = [s.queue[0] for s in (*_streams.values(), *_legacy.values(), *_draining()) if s.queue]
                ready = [o for o in heads if not o.running and o.ready()]
                if not ready:
                    if _running:  # another thread runs what we wait for
                        _progress.wait()
                        continue
                    msg = f"emulator: {target.what} can never run: its stream waits for work that was never enqueued"
                    raise BackendError(msg)
                chosen = chooser(ready)
                chosen.running, _running, claimed = True, _running + 1, chosen  # one statement: nothing lands between
            failure = _run(claimed)
        finally:
            if claimed is not None:
                with _lock:
                    if claimed.started:
                        claimed.stream.queue.popleft()
                        claimed.done = True
                    claimed.running = False
                    _running -= 1
                    if failure is not None and not raise_now:
                        # A check's fault names its kernel, block and thread already, and
                        # callers catch it by its class: it is reported as raised.
                        reported = failure if isinstance(failure, KernelFaultError) else BackendError(f"{claimed.what} failed: {failure}")
                        _faults.setdefault(claimed.stream.device, reported)
                    _progress.notify_all()
        if failure is not None and raise_now:
            raise failure


def _run(operation: Operation) -> BaseException | None:
    """Run ``operation``; the failure a wait reports, or None."""
    operation.started = True
    try:
        if operation.run is not None:
            operation.run()
    except (BackendError, ValueError, RuntimeError) as exc:
        return exc
    return None


def _needed(target: Operation) -> dict[Stream, int]:
    """Per stream, the last operation ``target`` waits for (by sequence number):
    its own stream's earlier work and, through ``after``, other streams' work."""
    needed: dict[Stream, int] = {}
    pending = [target]
    while pending:
        operation = pending.pop()
        queue = operation.stream.queue
        covered = needed.get(operation.stream, 0)
        if operation.done or covered >= operation.sequence:
            continue
        needed[operation.stream] = operation.sequence
        for earlier in queue:
            if earlier.sequence > operation.sequence:
                break
            if earlier.sequence > covered:
                pending.extend(earlier.after)
    return needed


def _draining() -> list[Stream]:
    _retired[:] = [s for s in _retired if s.queue]
    return _retired


def _chooser() -> tuple[Callable[[list[Operation]], Operation], bool]:
    """The schedule's pick among ready operations, and whether it runs only needed work."""
    text = os.environ.get("AOTC_EMULATOR_SCHEDULE", "lazy").strip() or "lazy"
    chooser = _schedule.get(text)
    if chooser is None:
        if text == "lazy":
            chooser = (_latest, True)
        elif text == "in-order":
            chooser = (_earliest, False)
        elif text.startswith("seed:") and text[5:].isdigit():
            chooser = (random.Random(int(text[5:])).choice, False)
        else:
            msg = f"AOTC_EMULATOR_SCHEDULE={echo(text)}: expected lazy (the default), in-order or seed:N (a whole number)"
            raise ConfigurationError(msg)
        _schedule[text] = chooser
    return chooser


def _latest(ready: list[Operation]) -> Operation:
    return max(ready, key=lambda o: o.sequence)


def _earliest(ready: list[Operation]) -> Operation:
    return min(ready, key=lambda o: o.sequence)
