"""The forbidden-routine watch in the student's process: guarded torch kernels, the audit hook, scipy's softmax.

Each use of a watched library routine is written at once, as one line, to the event pipe that only the grader
reads (``guard``); the grader attributes what arrives to the call in flight.
"""
import builtins as _builtins_module

# This module's own copy of the builtins, taken before any student code runs: a cell that patches ``builtins.any``,
# ``abs``, ``__import__``... changes the student's code, not the guard, the proxies or the wire format (a function
# looks its builtins up in its module's ``__builtins__``).
__builtins__ = dict(vars(_builtins_module))

import os  # noqa: E402
import sys

# The forbidden-routine rule, enforced where the student's code cannot switch it off (see ``guard``).
_KERNEL_OPS = {   # aten operator -> what the trusted side calls it (every registered CPU-side kernel is replaced)
    "_softmax": "torch:softmax", "_softmax.out": "torch:softmax", "_safe_softmax": "torch:softmax",
    "_masked_softmax": "torch:softmax", "_sparse_softmax": "torch:softmax",
    "_nested_tensor_softmax_with_shape": "torch:softmax",
    "_log_softmax": "torch:log_softmax", "_log_softmax.out": "torch:log_softmax",
    "_sparse_log_softmax": "torch:log_softmax",
    "scaled_dot_product_attention": "torch:scaled_dot_product_attention",
    "_scaled_dot_product_attention_math": "torch:scaled_dot_product_attention",
    "_scaled_dot_product_flash_attention_for_cpu": "torch:scaled_dot_product_attention",
    "_native_multi_head_attention": "torch:multi_head_attention_forward",
    "_transformer_encoder_layer_fwd": "torch:multi_head_attention_forward",
    # normalisation layers (``layer_norm`` may not call them: each computes a layer norm over a reshaped input)
    "layer_norm": "torch:layer_norm", "native_layer_norm": "torch:layer_norm",
    "group_norm": "torch:group_norm", "native_group_norm": "torch:group_norm",
    "batch_norm": "torch:batch_norm", "native_batch_norm": "torch:batch_norm",
    "_native_batch_norm_legit": "torch:batch_norm", "_native_batch_norm_legit_no_training": "torch:batch_norm",
    "_batch_norm_with_update": "torch:batch_norm", "_batch_norm_no_update": "torch:batch_norm",
    "instance_norm": "torch:batch_norm",
    "rms_norm": "torch:rms_norm", "_fused_rms_norm": "torch:rms_norm",
}
# Kernels that every Python-level library routine of the rule reaches (matrix products, tanh, exp): they report the
# routine when one of its functions is on the calling thread's stack.
_PROBE_OPS = ("mm", "bmm", "baddbmm", "addmm", "mv", "dot", "tanh", "exp", "rsqrt", "rsqrt_")
_KEYS = ("CPU", "SparseCPU", "NestedTensorCPU", "MkldnnCPU", "QuantizedCPU", "CompositeImplicitAutograd",
         "CompositeExplicitAutograd", "FuncTorchBatchedDecomposition", "FuncTorchVmapMode")
_RUNTIME_KEY = {"CompositeImplicitAutograd": "CPU", "CompositeExplicitAutograd": "CPU",
                "FuncTorchBatchedDecomposition": "FuncTorchBatched"}  # alias key -> the key its kernel is read at
_REFUSED = {   # audit events refused to the student's code once its first cell runs
    "os.fork", "os.forkpty", "os.posix_spawn", "os.spawn", "os.system", "os.exec", "subprocess.Popen", "pty.spawn",
    "ctypes.dlopen", "ctypes.dlsym", "ctypes.dlsym/handle", "ctypes.cdata", "ctypes.cdata/buffer",
    "ctypes.call_function", "ctypes.string_at", "ctypes.wstring_at", "ctypes.addressof", "ctypes.PyObj_FromPtr",
    "gc.get_objects", "gc.get_referrers", "gc.get_referents", "sys.settrace", "sys.setprofile",
    "sys._current_frames", "sys._current_exceptions", "os.add_dll_directory",
}
_FRAME_ATTRS = {"tb_frame", "gi_frame", "cr_frame", "ag_frame"}
_LAYERS = {   # Keras attention layers: module -> (class, label)
    "keras.src.layers.attention.attention": ("Attention", "keras:layers.Attention"),
    "keras.src.layers.attention.additive_attention": ("AdditiveAttention", "keras:layers.AdditiveAttention"),
    "keras.src.layers.attention.multi_head_attention": ("MultiHeadAttention", "keras:layers.MultiHeadAttention"),
    "keras.src.layers.attention.grouped_query_attention": ("GroupedQueryAttention", "keras:layers.GroupQueryAttention"),
    # Keras normalisation layers (on torch they end at torch's kernels above, or at ``rsqrt`` where they do not)
    "keras.src.layers.normalization.layer_normalization": ("LayerNormalization", "keras:layers.LayerNormalization"),
    "keras.src.layers.normalization.group_normalization": ("GroupNormalization", "keras:layers.GroupNormalization"),
    "keras.src.layers.normalization.batch_normalization": ("BatchNormalization", "keras:layers.BatchNormalization"),
    "keras.src.layers.normalization.rms_normalization": ("RMSNormalization", "keras:layers.RMSNormalization"),
}
_SCIPY = ("softmax", "log_softmax")   # scipy.special's routines, wrapped (``watch_scipy``)
# Audit events reported once each for the instructor's review (as ``review:<kind>`` lines): making a code object
# (``types.CodeType``, ``code.replace``), a function from one (``types.FunctionType``), replacing a function's code.
_REVIEWED_EVENTS = {"code.__new__": "code.__new__", "function.__new__": "function.__new__",
                    "object.__setattr__": "function.__code__"}
REVIEWS = frozenset(_REVIEWED_EVENTS.values())   # every review kind this monitor can report
# Every label this monitor can report; a grader's rule naming another could never see it (tests/sandbox/test_policy.py).
LABELS = frozenset({*_KERNEL_OPS.values(), *(label for _, label in _LAYERS.values()), "keras:ops.dot_product_attention",
                    "keras:ops.normalization",
                    "torch:multi_head_attention_forward", "torch:log_softmax", "torch:softmax",
                    "torch:scaled_dot_product_attention", *(f"scipy:special.{name}" for name in _SCIPY)})


def _routine_codes():
    """``{code object: routine}`` of the Python-level library routines of the rule (Keras attention layers and
    their internals, ``keras.ops.dot_product_attention``, torch's ``multi_head_attention_forward`` and the
    softmax/attention decompositions of ``torch._refs``/``torch._decomp``)."""
    import inspect

    found = {}

    def add(obj, label):
        for fn in ([obj] if inspect.isfunction(obj) else
                   [getattr(v, "__func__", v) for v in vars(obj).values()] if inspect.isclass(obj) else []):
            fn = inspect.unwrap(fn) if inspect.isfunction(fn) else fn
            code = getattr(fn, "__code__", None)
            if code is not None:
                found[code] = label

    def module(name):
        return sys.modules.get(name)

    for name, (cls, label) in _LAYERS.items():
        if module(name) is not None and hasattr(module(name), cls):
            add(getattr(module(name), cls), label)
    for name in ("keras.src.ops.nn", "keras.src.backend.torch.nn"):
        for attr, value in vars(module(name) or object).items() if module(name) else ():
            if "attention" in attr.lower():
                add(value, "keras:ops.dot_product_attention")
            elif "normalization" in attr.lower():      # layer_normalization, rms_normalization, batch_normalization
                add(value, "keras:ops.normalization")
    functional = module("torch.nn.functional")
    if functional is not None:
        add(functional.multi_head_attention_forward, "torch:multi_head_attention_forward")
        add(sys.modules["torch.nn"].MultiheadAttention, "torch:multi_head_attention_forward")
    for name in ("torch._refs", "torch._refs.nn.functional", "torch._refs.special", "torch._decomp.decompositions",
                 "torch._decomp.decompositions_for_jvp"):
        for attr, value in vars(module(name) or object).items() if module(name) else ():
            low = attr.lower()
            label = ("torch:log_softmax" if "log_softmax" in low else "torch:softmax" if "softmax" in low else
                     "torch:scaled_dot_product_attention" if "scaled_dot_product" in low else None)
            if label:
                add(value, label)
    return found


_CACHED = 4096   # code objects the kernels remember the content of (by identity), at most


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
      its code is (``content``: a clone or a pasted copy is seen), not by which object it is.
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

    What it cannot see is listed in the README (trust boundary): a signal handler's frame argument, library source
    copied into the notebook, numpy-only library routines (scipy's softmax is wrapped, and flagged statically).
    """
    import threading
    import weakref

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
    get, Denied, NoFrame = getattr, PermissionError, ValueError
    stat = fstat(event_fd)
    identity = (stat.st_dev, stat.st_ino)
    local = threading.local()
    guard_codes = set()

    # A routine is known by what it is, not by which object it is: ``content`` is what a code object computes,
    # apart from where and how it was written. On Python 3.11 (the course's) it is its instructions as they run:
    # no NOP or EXTENDED_ARG, constants by value (nested code objects by their own content), names by name, local
    # and cell variables by number, jumps by the instruction they land on, with its argument counts and kind of
    # function; so line numbers and layout (NOPs), the docstring, comments, local names, the function's name,
    # qualified name and file do not matter. A clone (``code.replace``, ``FunctionType``), a copy under another
    # name, and its source compiled again (pasted, reformatted, without its docstring) have the content of the
    # original. Elsewhere the bytecode, constants and names as they are (clones and verbatim copies only). None for a
    # constant of a kind no library routine has (nothing of the student's is called to compare it). The kernels
    # remember each code object they met by identity (a weak reference: an id is reused only once its object is
    # gone), at most ``_CACHED`` of them.
    import dis

    kind, hexf, length, ident, ref, tuple_, sorted_, repr_ = type, float.hex, len, id, weakref.ref, tuple, sorted, repr
    code_type, float_type, complex_type, frozenset_type = type(guard.__code__), float, complex, frozenset
    plain, text = frozenset({int, bool, str, bytes, type(None), type(...)}), str
    Unusual, cached = (RecursionError, TypeError, ValueError, IndexError, KeyError, MemoryError), _CACHED
    by_instructions = sys.version_info[:2] == (3, 11)
    cache_entries = tuple(dis._inline_cache_entries) if by_instructions else ()
    has_const, has_name, has_jump = frozenset(dis.hasconst), frozenset(dis.hasname), frozenset(dis.hasjrel)
    backward = frozenset(op for op, name in enumerate(dis.opname) if "JUMP_BACKWARD" in name)
    skipped = frozenset({dis.opmap["NOP"], dis.opmap["EXTENDED_ARG"], dis.opmap.get("CACHE", 0)})
    extended, load_global, function_kind = dis.opmap["EXTENDED_ARG"], dis.opmap["LOAD_GLOBAL"], 0x3AC

    def content(code, depth):
        if depth > 16:
            return None
        if not by_instructions:
            consts = []
            for const in code.co_consts:
                kept = constant(const, depth)
                if kept is None:
                    return None
                consts.append(kept)
            return (code.co_code, tuple_(consts), code.co_names, code.co_argcount, code.co_posonlyargcount,
                    code.co_kwonlyargcount)
        raw, names, consts = code.co_code, code.co_names, code.co_consts
        decoded, offset, ext, end = [], 0, 0, length(raw)
        while offset < end:
            op = raw[offset]
            arg = raw[offset + 1] | ext
            ext = (arg << 8) if op == extended else 0
            decoded.append((offset, op, arg))
            offset += 2 + 2 * cache_entries[op]
        position, at = 0, {}
        for offset, op, _ in decoded:      # a jump to a skipped instruction lands on the next one kept
            at[offset] = position
            if op not in skipped:
                position += 1
        out = []
        for offset, op, arg in decoded:
            if op in skipped:
                continue
            if op in has_const:
                kept = constant(consts[arg], depth)
                if kept is None:
                    return None
                out.append((op, kept))
            elif op == load_global:
                out.append((op, names[arg >> 1], arg & 1))
            elif op in has_name:
                out.append((op, names[arg]))
            elif op in has_jump:
                out.append((op, at.get(offset + 2 + (-2 * arg if op in backward else 2 * arg), -1)))
            else:
                out.append((op, arg))
        return (tuple_(out), code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount,
                code.co_flags & function_kind)

    def constant(const, depth):
        k = kind(const)
        if k is code_type:
            nested = content(const, depth + 1)
            return None if nested is None else ("code", nested)
        if k is float_type:
            return ("float", hexf(const))
        if k is complex_type:
            return ("complex", hexf(const.real), hexf(const.imag))
        if k is tuple_ or k is frozenset_type:
            items = []
            for c in const:
                item = constant(c, depth + 1)
                if item is None:
                    return None
                items.append(item)
            return (k.__name__, tuple_(sorted_(items, key=repr_) if k is frozenset_type else items))
        if k in plain:
            return (k.__name__, const)
        return None

    watched = {}
    for code, label in _routine_codes().items():
        found = content(code, 0)
        if found is not None:
            watched[found] = (label + "\n").encode()
    seen = {}

    def known(code):
        """The report of the watched routine ``code`` is (a copy of), or None."""
        entry = seen.get(ident(code))
        if entry is not None and entry[0]() is code:
            return entry[1]
        try:
            token = watched.get(content(code, 0))
            weak = ref(code)
        except Unusual:
            return None
        if length(seen) >= cached:
            for key in [k for k, (r, _) in seen.items() if r() is None]:
                del seen[key]
            if length(seen) >= cached:
                seen.clear()
        seen[ident(code)] = (weak, token)
        return token

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
    guard_codes |= {probe.__code__, known.__code__, content.__code__, constant.__code__}

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

