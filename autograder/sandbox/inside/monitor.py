"""The forbidden-routine watch in the student's process: guarded torch kernels, the audit hook, scipy's softmax.

Each use of a watched library routine is written at once, as one line, to the event pipe that only the grader
reads (``guard``); the grader attributes what arrives to the call in flight. What is watched is ``watched.py``; how
a Python-level routine is known by its code, ``recognise.py``.
"""
import builtins as _builtins_module

# This module's own copy of the builtins, taken before any student code runs: a cell that patches ``builtins.any``,
# ``abs``, ``__import__``... changes the student's code, not the guard, the proxies or the wire format (a function
# looks its builtins up in its module's ``__builtins__``).
__builtins__ = dict(vars(_builtins_module))

import os  # noqa: E402
import sys

from .recognise import recogniser  # noqa: E402
from .watched import (_FRAME_ATTRS, _KERNEL_OPS, _KEYS, _PROBE_OPS, _REFUSED, _REVIEWED_EVENTS,  # noqa: E402
                      _RUNTIME_KEY, _SCIPY, routine_codes)


def guard(event_fd):
    """Install the forbidden-routine watch and the audit hook in this (the student's) process; returns an ``emit``
    for the reports of scipy's wrappers (``watch_scipy``), not the one the kernels use.

    The hook is armed by ``sys.audit("autograder.arm")`` before the first cell (arming early only restricts more).

    Design (what the student's code can and cannot do about it):

    * **Seen at torch's dispatcher.** Every kernel of the forbidden operators (softmax, log-softmax, SDPA and its
      flash/math kernels, native multi-head attention) on every CPU-side dispatch key is replaced by one that first
      reports and then runs the original kernel (``torch.library.get_kernel``). Python, ``torch.ops``,
      ``torch._C``, threads, ``torch.jit``, ``vmap``, ``redispatch`` to the CPU key: every road ends at a leaf
      kernel, so every road is seen. Python-level routines (Keras attention layers and their internals,
      ``multi_head_attention_forward``, torch's decompositions) reach a matrix product, ``tanh`` or ``exp``
      kernel: those report the routine when one of its functions is on the calling thread's stack, known by what
      its code is (``recognise.recogniser``: a clone or a pasted copy is seen), not by which object it is.
    * **Nothing to undo.** Each use is written at once, as one line, to ``event_fd``, a pipe whose read end only
      the grader holds: a byte sent cannot be taken back. Nothing is recorded in this process. The kernels, the
      pipe's identity and every name they use at run time live in closures that no student object refers to (not
      this module's globals or builtins, which the student's code can reach); a closed or replaced pipe makes the
      kernels refuse to compute, and the grader counts a closed pipe as tampering.
    * **Attribution on the trusted side**: what arrives while a graded call is in flight (its conversion to arrays
      included, so a lazy object that computes when converted is seen) counts against that call. No function name
      chosen by the student is consulted.
    * **An audit hook** (it cannot be removed), armed before the first cell: no fork/exec/spawn (so no child that
      escapes the watch or the memory rule), no ``ctypes``, no ``gc.get_objects``/``get_referrers``/
      ``get_referents``, no ``sys.settrace``/``setprofile``/``_current_frames``, and no frame (``sys._getframe``,
      ``tb_frame``, ``gi_frame``, ...) from which one of the guard's frames can be reached.

    What it cannot see is listed in docs/security/model.md: a signal handler's frame argument, library source
    copied into the notebook, numpy-only library routines (scipy's softmax is wrapped, and flagged statically).
    """
    import threading

    import torch
    from torch.library import Library, get_kernel

    # torch.compile runs eagerly here (so through the kernels below); tracing with fake tensors would run torch's
    # own Python code beneath a guard kernel, where the audit hook refuses frames, and fail without saying why.
    os.environ["TORCHDYNAMO_DISABLE"] = "1"
    if "torch._dynamo.config" in sys.modules:
        sys.modules["torch._dynamo.config"].disable = True

    # Every name the kernels, the probe and the hook use when the student's code runs is bound here, in this
    # function's closure: none of them looks up a global or a builtin then. This module's globals and builtins are
    # within the student's reach (the serve loop's frame is below every call: ``sys._getframe(1).f_globals
    # ["guard"].__globals__``); a closure's cells only through its function objects, which no student object holds
    # (tests/sandbox/test_policy.py checks that no run-time code of the guard loads a global).
    write, fstat, getframe = os.write, os.fstat, sys._getframe
    refused, frame_attrs = frozenset(_REFUSED), frozenset(_FRAME_ATTRS)
    get, Denied, NoFrame, kind, text = getattr, PermissionError, ValueError, type, str
    stat = fstat(event_fd)
    identity = (stat.st_dev, stat.st_ino)
    local = threading.local()
    guard_codes = set()

    known, recognising = recogniser(routine_codes())

    def emitter(write, fstat, event_fd, identity, Denied):
        """A function that writes one report to the event pipe, checked to be the pipe it was. Each call makes one
        with cells of its own: whoever holds one can rewrite its cells, so the kernels' own is never handed out."""
        def emit(token):
            now = fstat(event_fd)
            if (now.st_dev, now.st_ino) != identity:
                raise Denied("채점 기록 통로가 바뀌어 이 연산을 실행하지 않습니다")
            write(event_fd, token)
        guard_codes.add(emit.__code__)
        return emit

    emit = emitter(write, fstat, event_fd, identity, Denied)

    def probe():
        local.inside = True
        try:
            frame = getframe(2)   # the kernel's caller (0: probe, 1: the kernel)
        except NoFrame:           # called from a thread without Python frames: no library routine above it
            frame = None
        finally:
            local.inside = False
        while frame is not None:
            label = known(frame.f_code)
            if label is not None:
                emit(label)
                return
            frame = frame.f_back

    def make(original, token):
        if original is None:
            def kernel(keyset, *args, **kwargs):
                raise Denied("채점 중에는 이 텐서 형식으로 이 연산을 쓸 수 없습니다")
        elif token is None:
            def kernel(keyset, *args, **kwargs):
                probe()
                return original.call_boxed(keyset, *args, **kwargs)
        else:
            def kernel(keyset, *args, **kwargs):
                emit(token)
                probe()
                return original.call_boxed(keyset, *args, **kwargs)
        guard_codes.add(kernel.__code__)
        return kernel

    import warnings

    library = Library("aten", "IMPL")
    for op, label in list(_KERNEL_OPS.items()) + [(op, None) for op in _PROBE_OPS]:
        try:
            registrations = torch._C._dispatch_dump(f"aten::{op}").splitlines()
        except RuntimeError:
            continue
        token = None if label is None else (label + "\n").encode()
        keys = {line.split(":")[0].replace("[alias]", "") for line in registrations
                if ": registered at" in line and "(inactive)" not in line and "fallthrough" not in line}
        originals = {}
        for key in sorted(keys & set(_KEYS)):  # every original first: an alias key's is computed from the others
            try:
                originals[key] = get_kernel(f"aten::{op}", _RUNTIME_KEY.get(key, key))
            except (ValueError, RuntimeError):  # a key torch cannot hand out (MkldnnCPU): its tensors are refused
                originals[key] = None
        for key, original in originals.items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # "overriding a previously registered kernel": that is the point
                library.impl(op, make(original, token), key, with_keyset=True)
    guard_codes |= {probe.__code__} | recognising

    def reaches_guard(frame):
        while frame is not None:
            if frame.f_code in guard_codes:
                return True
            frame = frame.f_back
        return False

    armed = []
    # Making a code object or a function from one, and replacing a function's code, are how a library routine is
    # cloned: each kind is reported once, for the instructor's review list (the kernels know the clone itself by
    # its content). ``object.__getattr__`` of ``__code__`` is not: inspect.signature and Keras read it all the time.
    reviewed = {event: f"review:{kind}\n".encode() for event, kind in _REVIEWED_EVENTS.items()}
    reported = set()

    def hook(event, args):
        if event == "autograder.arm":
            armed.append(keep)
            return
        if not armed or get(local, "inside", False):
            return
        if event in refused:
            raise Denied(f"채점 중에는 `{event}`은(는) 쓸 수 없습니다")
        token = reviewed.get(event)
        if token is not None and token not in reported:
            if event != "object.__setattr__" or (args[1:] and kind(args[1]) is text and args[1] == "__code__"):
                reported.add(token)
                emit(token)
        if event == "sys._getframe":
            if reaches_guard(args[0]):
                raise Denied("채점기의 프레임에는 접근할 수 없습니다")
        elif event == "object.__getattr__" and args[1:] and kind(args[1]) is text and args[1] in frame_attrs:
            local.inside = True
            try:
                frame = get(args[0], args[1], None)
            finally:
                local.inside = False
            if reaches_guard(frame):
                raise Denied("채점기의 프레임에는 접근할 수 없습니다")

    keep = library  # the registrations live as long as the hook, which the interpreter alone holds
    guard_codes.add(hook.__code__)
    guard_codes.add(reaches_guard.__code__)
    sys.addaudithook(hook)
    return emitter(write, fstat, event_fd, identity, Denied)   # for scipy's wrappers: not the kernels' own


def watch_scipy(emit, done):
    """scipy's softmax is numpy code that no torch kernel sees: wrapped (once imported) to report its use."""
    special = sys.modules.get("scipy.special")
    if special is None or done:
        return
    for name in _SCIPY:
        original, token = getattr(special, name, None), f"scipy:special.{name}\n".encode()
        if original is None:
            continue

        def wrapper(*args, _original=original, _token=token, **kwargs):
            emit(_token)
            return _original(*args, **kwargs)

        wrapper.__name__, wrapper.__doc__ = name, original.__doc__
        setattr(special, name, wrapper)
    done.append(True)

