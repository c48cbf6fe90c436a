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
from .watched import (CHANGED, FRAME_ATTRS, GENERATED, HANDLER, KERAS_MODULES, KERNEL_OPS, KEYS, LAYERS,  # noqa: E402
                      PROBE_OPS, REFUSED, REVIEWED_EVENTS, RUNTIME_KEY, SCIPY, SOURCE, TAMPERED, TORCH_MODULES,
                      VERIFIED_MODULES, WHOLE_MODULES, import_watched, routine_codes)


def guard(event_fd, handlers=()):
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

    * **No frame handed out by a signal**: a kernel refuses to run while a Python signal handler of the student's is
      installed (a handler is given the frame it interrupts); ``verifier``: the library as it was, after every
      graded call; ``source_watch``: library source compiled again, for review; ``/proc/.../clear_refs`` refused.

    What it enforces, what it flags and what it cannot stop: docs/security/guard.md.
    """
    import threading

    import torch

    # torch.compile runs eagerly here (so through the kernels below); tracing with fake tensors would run torch's
    # own Python code beneath a guard kernel, where the audit hook refuses frames, and fail without saying why.
    os.environ["TORCHDYNAMO_DISABLE"] = "1"
    if "torch._dynamo.config" in sys.modules:
        sys.modules["torch._dynamo.config"].disable = True

    # Every name the kernels, the probe and the hook use when the student's code runs is bound here, in this
    # function's closure: none of them looks up a global or a builtin then. This module's globals and builtins are
    # within the student's reach (the serve loop's frame is below every call: ``sys._getframe(1).f_globals
    # ["guard"].__globals__``); a closure's cells only through its function objects, which no student object holds
    # (tests/sandbox/live/test_policy.py checks that no run-time code of the guard loads a global).
    write, fstat, getframe = os.write, os.fstat, sys._getframe
    get, Denied, NoFrame, kind, text = getattr, PermissionError, ValueError, type, str
    stat = fstat(event_fd)
    identity = (stat.st_dev, stat.st_ino)
    local = threading.local()
    guard_codes = set()

    import_watched()
    routines = routine_codes()
    known, teach, recognising = recogniser(routines)

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

    # No Python signal handler of the student's while a guard kernel runs (``signal_watch``); ``handlers`` are the
    # serve loop's own (its time limit's SIGALRM handler), allowed with the code they had now.
    foreign_handler = signal_watch(handlers, emit, get, kind)

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

    libraries, kernel_codes = guard_kernels(torch, local, emit, probe, foreign_handler, get, Denied)
    guard_codes |= kernel_codes
    guard_codes |= {probe.__code__, foreign_handler.__code__} | recognising
    # code generated by torch.fx from a trace of a watched routine is known as that routine (``fx_watch``)
    traced, hooked, tracing = fx_watch(torch, local, known, teach, emit, get, kind, text, getframe)
    guard_codes |= tracing

    verify, verifying = verifier(torch, local, emit, get, kind, routines, hooked)
    copied, opened, library_files, watching = source_watch(torch, local, kind, text)
    guard_codes |= verifying | watching

    hook, hooking = audit_hook(local, emit, guard_codes, libraries, traced, verify, opened, copied, library_files,
                               get, Denied, kind, text)
    guard_codes |= hooking
    sys.addaudithook(hook)
    return emitter(write, fstat, event_fd, identity, Denied)   # for scipy's wrappers: not the kernels' own


def audit_hook(local, emit, guard_codes, keep, traced, verify, opened, copied, library_files, get, Denied, kind, text):
    """The guard's audit hook (it cannot be removed) and the codes of what it runs: nothing happens until
    ``sys.audit("autograder.arm")``; then the events of ``REFUSED`` are refused, a frame from which one of the guard's
    frames (``guard_codes``) can be reached is refused, ``/proc/.../clear_refs`` is refused, the events of
    ``REVIEWED_EVENTS`` and library source compiled or run again are reported once each (for the instructor's
    review list), and the torch.fx watch's events (``traced``), the check after each graded call (``verify``) and
    every file opened (``opened``) are handed on. ``keep``: what must live as long as the hook (the kernels'
    registrations). Every name it uses at run time is in its closure, as the guard's (``guard``)."""
    refused, frame_attrs = frozenset(REFUSED), frozenset(FRAME_ATTRS)
    realpath, path_types = os.path.realpath, (str, bytes)

    def reaches_guard(frame):
        while frame is not None:
            if frame.f_code in guard_codes:
                return True
            frame = frame.f_back
        return False

    def resets_peak(path):
        """``/proc/.../clear_refs`` under any name: writing to it resets the peak the memory rule reads."""
        if kind(path) not in path_types:
            return False
        if kind(path) is not text:
            path = path.decode("utf-8", "replace")
        local.inside = True
        try:
            return path.endswith("clear_refs") or realpath(path).endswith("clear_refs")
        finally:
            local.inside = False

    armed = []
    # Making a code object or a function from one, and replacing a function's code, are how a library routine is
    # cloned: each kind is reported once, for the instructor's review list (the kernels know the clone itself by
    # its content). ``object.__getattr__`` of ``__code__`` is not: inspect.signature and Keras read it all the time.
    reviewed = {event: f"review:{kind}\n".encode() for event, kind in REVIEWED_EVENTS.items()}
    reported = set()
    source_token = f"review:{SOURCE}\n".encode()

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
        if event[:14] == "autograder.fx.":   # what a torch.fx tracer recorded or generated (``fx_watch``)
            local.inside = True
            try:
                traced(event, args)
            finally:
                local.inside = False
            return
        if event == "autograder.verify":   # after every graded call (``serve``)
            local.inside = True
            try:
                verify()
            finally:
                local.inside = False
            return
        if event == "open":
            if resets_peak(args[0] if args else None):
                raise Denied("채점 중에는 메모리 측정을 되돌릴 수 없습니다 (clear_refs)")
            opened(args[0] if args else None)
            return
        if event == "compile" or event == "exec":
            if (event == "compile" and copied(args[0] if args else None)) or (
                    event == "exec" and args and get(args[0], "co_filename", None) in library_files):
                if source_token not in reported:
                    reported.add(source_token)
                    emit(source_token)
            return
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

    return hook, {hook.__code__, reaches_guard.__code__, resets_peak.__code__}


def signal_watch(handlers, emit, get, kind):
    """``foreign_handler()``: whether a Python signal handler other than ``handlers`` (with the code they have now) is
    installed, reported once for review. A handler is given the frame it interrupted, and from a guard kernel's frame
    the original kernel (and the kernels' thread-local state) can be read: a kernel refuses to run while one is
    installed (and one installed while it ran, by a finaliser, fails it afterwards)."""
    import _signal

    # ``_signal``'s own C functions (``signal.getsignal`` reads names from the signal module, which a cell can edit)
    getsignal, number_type, interrupt = _signal.getsignal, int, _signal.default_int_handler
    valid = tuple(sorted(_signal.valid_signals() - {_signal.SIGKILL, _signal.SIGSTOP}))
    own = tuple((handler, handler.__code__) for handler in handlers)
    handler_token = f"review:{HANDLER}\n".encode()
    handler_reported = []

    def foreign_handler():
        for number in valid:
            handler = getsignal(number)
            if handler is None or handler is interrupt or kind(handler) is number_type:   # SIG_DFL, SIG_IGN
                continue
            for allowed, code in own:
                if handler is allowed and get(handler, "__code__", None) is code:
                    break
            else:
                if not handler_reported:
                    handler_reported.append(True)
                    emit(handler_token)
                return True
        return False

    return foreign_handler


def guard_kernels(torch, local, emit, probe, foreign_handler, get, Denied):
    """Replace every kernel of the forbidden operators (``KERNEL_OPS``, reported by their label) and of the probed ones
    (``PROBE_OPS``, which report the library routine on the calling thread's stack, ``probe``) on every CPU-side
    dispatch key by one that reports and then runs the original. Returns the ``torch.library.Library`` objects
    that hold the registrations (they live as long as they are referenced) and the kernels' code objects."""
    from torch.library import Library, get_kernel

    codes = set()
    refusal = "채점 중에는 신호 처리기를 둔 채로 torch 연산을 쓸 수 없습니다"
    # Each kernel counts its calls on the calling thread (``local.hits``: the canaries of ``verify`` check that
    # torch's entry points still reach them) and reports nothing while ``verify`` runs its canaries (``local.quiet``).
    def make(original, token):
        if original is None:
            def kernel(keyset, *args, **kwargs):
                raise Denied("채점 중에는 이 텐서 형식으로 이 연산을 쓸 수 없습니다")
        elif token is None:
            def kernel(keyset, *args, **kwargs):
                if foreign_handler():
                    raise Denied(refusal)
                local.hits = get(local, "hits", 0) + 1
                if not get(local, "quiet", False):
                    probe()
                result = original.call_boxed(keyset, *args, **kwargs)
                if foreign_handler():
                    raise Denied(refusal)
                return result
        else:
            def kernel(keyset, *args, **kwargs):
                if foreign_handler():
                    raise Denied(refusal)
                local.hits = get(local, "hits", 0) + 1
                if not get(local, "quiet", False):
                    emit(token)
                    probe()
                # while it runs, the routine is in progress on this thread (``local.active``, a linked stack): what a
                # tracer records meanwhile (a decomposition of it, a mode's nodes) is its code (``fx_watch``)
                outer = get(local, "active", None)
                local.active = (token, outer)
                try:
                    result = original.call_boxed(keyset, *args, **kwargs)
                finally:
                    local.active = outer
                if foreign_handler():
                    raise Denied(refusal)
                return result
        codes.add(kernel.__code__)
        return kernel

    import warnings

    libraries = {}
    for name, label in list(KERNEL_OPS.items()) + [(op, None) for op in PROBE_OPS]:
        namespace, op = name.split("::") if "::" in name else ("aten", name)
        try:
            registrations = torch._C._dispatch_dump(f"{namespace}::{op}").splitlines()
        except RuntimeError:
            continue
        if namespace not in libraries:
            libraries[namespace] = Library(namespace, "IMPL")
        library = libraries[namespace]
        token = None if label is None else (label + "\n").encode()
        keys = {line.split(":")[0].replace("[alias]", "") for line in registrations
                if ": registered at" in line and "(inactive)" not in line and "fallthrough" not in line}
        keys &= set(KEYS)
        originals = {}
        for key in sorted(keys):  # every original first: an alias key's is computed from the others
            try:
                originals[key] = get_kernel(f"{namespace}::{op}", RUNTIME_KEY.get(key, key))
            except (ValueError, RuntimeError):  # a key torch cannot hand out (MkldnnCPU): its tensors are refused
                originals[key] = None
        for key, original in originals.items():
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # "overriding a previously registered kernel": that is the point
                library.impl(op, make(original, token), key, with_keyset=True)
    return libraries, codes


def verifier(torch, local, emit, get, kind, routines, hooked=()):
    """``(verify, codes)``: ``verify()`` (after every graded call) checks the library against what it was now and
    reports a change
    (``TAMPERED`` each time it is seen, ``review:library.changed`` once); ``codes`` are the code objects that run then.

    Compared, by identity: the functions, classes and submodules of the watched modules (``VERIFIED_MODULES``, those
    the rules' routines live in) and of the watched classes, and names added since that shadow a builtin;
    ``torch.library._impls`` (cleared, a kernel can be registered over the guard's); and canaries: torch's own C
    entry points (bound now, out of the student's reach) run on small tensors must each reach a guard kernel, so a
    kernel registered over the guard's (or over the composite operator above it) is seen.

    Every change is listed for review; it costs the call (``TAMPERED``) where it can hide a routine from the watch:
    a name that the watched routines' code reads (``routines``: their globals and attributes, as ``ops`` in Keras's
    attention module) replaced by something that is not itself a watched routine, a builtin shadowed, a kernel
    registration, one of the ``hooked`` names (``(owner, names)``: the guard's own hooks in the library,
    ``fx_watch``). A watched routine replaced by the student's own function (``F.scaled_dot_product_attention`` by a
    lambda) hides nothing: what runs in its place is the student's code, watched as any other.
    """
    import builtins
    import inspect

    names = (*VERIFIED_MODULES, *LAYERS, *TORCH_MODULES, *WHOLE_MODULES, *KERAS_MODULES)
    owners = [sys.modules[name] for name in dict.fromkeys(names) if name in sys.modules]
    owners += [get(sys.modules[name], cls) for name, (cls, _) in LAYERS.items()
               if name in sys.modules and hasattr(sys.modules[name], cls)]
    owners += [torch.Tensor, torch.nn.Module]
    module_type, absent = kind(sys), object()
    used, pending = set(), list(routines)
    while pending:   # every name the routines' code (nested functions included) reads
        code = pending.pop()
        used.update(code.co_names)
        pending += [const for const in code.co_consts if kind(const) is kind(code)]

    any_, attribute, space_of, kernel_ops = any, getattr, vars, frozenset(KERNEL_OPS)   # no global in ``routine``

    def routine(value):
        if inspect.isclass(value):
            return any_(attribute(attribute(v, "__func__", v), "__code__", None) in routines
                        for v in space_of(value).values())
        if inspect.isfunction(value):
            return value.__code__ in routines or inspect.unwrap(value).__code__ in routines
        return inspect.isbuiltin(value) and attribute(value, "__name__", "") in kernel_ops

    saved = []
    for owner in owners:
        space = vars(owner)
        entries = tuple((key, value, key in used and not routine(value)) for key, value in space.items()
                        if callable(value) or kind(value) is module_type)
        saved.append((space, entries, len(space), frozenset(space)))
    for owner, names in hooked:   # the guard's hooks: any change switches a watch off
        space = vars(owner)
        saved.append((space, tuple((key, space.get(key, absent), True) for key in names), len(space),
                      frozenset(space)))
    shadowing = frozenset(name for name in vars(builtins) if not name.startswith("__"))
    library = sys.modules["torch.library"]
    impls, impls_saved = library._impls, frozenset(library._impls)
    functions = torch._C._VariableFunctions
    square, cube = torch.ones(2, 2), torch.ones(1, 2, 2)
    # the probe's kernels (what a Python-level library routine is seen by) and the softmax and layer norm entry points;
    # the guard's other kernels cannot be bypassed by a kernel over them (their originals are only in its closures)
    canaries = ((functions.matmul, (square, square)), (functions.matmul, (cube, cube)),
                (functions.softmax, (square, -1)), (functions.log_softmax, (square, -1)), (functions.exp, (square,)),
                (functions.tanh, (square,)), (functions.sqrt, (square,)), (functions.rsqrt, (square,)),
                (functions.layer_norm, (square, [2])))
    tampered, review, reported = (TAMPERED + "\n").encode(), f"review:{CHANGED}\n".encode(), []
    length, frozen, Failure = len, frozenset, Exception

    def changed():
        """None (as it was), False (changed, hiding nothing) or True (changed where it can hide a routine)."""
        seen = None
        for space, entries, size, keys in saved:
            for key, value, costly in entries:
                if space.get(key, absent) is not value:
                    if costly:
                        return True
                    seen = False
            if length(space) != size and (frozen(space) - keys) & shadowing:
                return True
        if get(library, "_impls", None) is not impls or not impls >= impls_saved:
            return True
        local.quiet = True
        try:
            for function, args in canaries:
                before = get(local, "hits", 0)
                try:
                    function(*args)
                except Failure:
                    return True
                if get(local, "hits", 0) == before:
                    return True
        finally:
            local.quiet = False
        return seen

    def verify():
        found = changed()
        if found:
            emit(tampered)
        if found is not None:
            if not reported:
                reported.append(True)
                emit(review)

    return verify, {changed.__code__, verify.__code__}


def fx_watch(torch, local, known, teach, emit, get, kind, text, getframe):
    """``(handle, owners, codes)`` of the watch on the code that torch.fx generates (make_fx, torch.export, symbolic
    tracing: every tracer records through ``torch.fx.Graph``).

    ``torch.fx.Graph``'s ``create_node``, ``node_copy`` and ``python_code`` are replaced by wrappers that call the
    original and then raise an audit event (``_graph_hooks``: they hold nothing of the guard's, only the original
    and ``sys.audit``); the audit hook passes those events to ``handle(event, args)``, which runs out of the student's
    reach (a hook the interpreter alone holds):

    * a graph is tainted when a node is recorded while a watched routine is in progress on the thread (one of its
      frames on the stack, known by its code; or a watched kernel running, ``local.active``: a C++ decomposition of
      it, a dispatch mode's handling of it), and when a node of a tainted graph is copied into it (``graph_copy``,
      ``deepcopy``, ``ExportedProgram.module()``); the first taint is listed for review (``review:library.traced``);
    * the Python code generated from a tainted graph (what ``GraphModule`` compiles, ``<eval_with_key>``) is taught to
      the recogniser with the routines' reports (``teach``): whenever it, or its source compiled again, runs beneath
      a probe kernel, the routine is reported, in a graded call or not.

    Calling a wrapper's event by hand only taints more. ``owners``: ``(namespace owner, names)`` whose entries must
    stay as installed (``verifier``: a change costs every call, ``TAMPERED``); ``codes``: the code objects that run
    when ``handle`` runs."""
    import weakref

    import torch.fx.graph  # noqa: F401 - torch imports it already
    import torch.fx.graph_module  # noqa: F401

    graph_module = sys.modules["torch.fx.graph"]
    Graph, Node, PythonCode = graph_module.Graph, graph_module.Node, graph_module.PythonCode
    ref, ident, frozen, join, sorted_, compile_ = weakref.ref, id, frozenset, b"".join, sorted, compile
    NoFrame, Failure, Unreferable, length, new_set = ValueError, Exception, TypeError, len, set
    tainted = {}   # id(graph) -> (weak reference, frozenset of report lines)
    review, reported = f"review:{GENERATED}\n".encode(), []

    def taint_of(graph):
        entry = tainted.get(ident(graph))
        return entry[1] if entry is not None and entry[0]() is graph else None

    def taint(graph, found):
        before = taint_of(graph)
        if before is not None and before >= found:
            return
        key = ident(graph)

        def gone(_, key=key):
            tainted.pop(key, None)

        try:
            tainted[key] = (ref(graph, gone), found if before is None else before | found)
        except Unreferable:   # not a graph (the event raised by hand with something else): nothing to taint
            return
        if not reported:
            reported.append(True)
            emit(review)

    def in_progress():
        """The reports of the watched routines in progress on this thread: kernels running, frames on the stack."""
        found, node = new_set(), get(local, "active", None)
        while node is not None:
            found.add(node[0])
            node = node[1]
        try:
            frame = getframe(1)   # (the guard's own frames below are none of the routines)
        except NoFrame:
            frame = None
        while frame is not None:
            token = known(frame.f_code)
            if token is not None:
                found.add(token)
            frame = frame.f_back
        return frozen(found)

    def handle(event, args):
        if length(args) < 2:
            return
        graph = args[0]
        if event == "autograder.fx.node":
            found = in_progress()
            if found:
                taint(graph, found)
        elif event == "autograder.fx.copy":
            # torch's own node (its class exactly: reading ``graph`` runs nothing of the student's)
            found = taint_of(get(args[1], "graph", None)) if kind(args[1]) is Node else None
            if found:
                taint(graph, found)
        elif event == "autograder.fx.code":
            found = taint_of(graph)
            source = get(args[1], "src", None) if found and kind(args[1]) is PythonCode else None
            if kind(source) is text:
                try:
                    teach(compile_(source, "<generated>", "exec", dont_inherit=True), join(sorted_(found)))
                except Failure:   # code that does not compile here does not run there either
                    pass

    for name, hook in _graph_hooks(Graph, sys.audit).items():
        setattr(Graph, name, hook)
    codes = {taint_of.__code__, taint.__code__, in_progress.__code__, handle.__code__}
    codes |= {const for code in (taint.__code__,) for const in code.co_consts if kind(const) is kind(code)}
    owners = [(Graph, frozen({"create_node", "node_copy", "python_code"})),
              (graph_module, frozen({"Graph"})), (sys.modules["torch.fx"], frozen({"Graph", "GraphModule"})),
              (sys.modules["torch.fx.graph_module"], frozen({"GraphModule", "_exec_with_source", "_forward_from_src",
                                                             "_method_from_src"}))]
    return handle, owners, codes


def _graph_hooks(Graph, audit):
    """The wrappers of ``torch.fx.Graph``'s methods that tell the guard (``fx_watch``) what a tracer did: each calls
    the original and raises an audit event with what it made. They hold the original and ``sys.audit`` only (both
    within the student's reach anyway)."""
    create_node, node_copy, python_code = Graph.create_node, Graph.node_copy, Graph.python_code

    def watched_create_node(self, *args, **kwargs):
        node = create_node(self, *args, **kwargs)
        audit("autograder.fx.node", self, node)
        return node

    def watched_node_copy(self, node, *args, **kwargs):
        copy = node_copy(self, node, *args, **kwargs)
        audit("autograder.fx.copy", self, node)
        return copy

    def watched_python_code(self, *args, **kwargs):
        generated = python_code(self, *args, **kwargs)
        audit("autograder.fx.code", self, generated)
        return generated

    hooks = {"create_node": watched_create_node, "node_copy": watched_node_copy, "python_code": watched_python_code}
    for name, hook in hooks.items():
        original = getattr(Graph, name)
        hook.__name__, hook.__qualname__, hook.__doc__ = name, original.__qualname__, original.__doc__
    return hooks


def source_watch(torch, local, kind, text):
    """``(copied, opened, library_files, codes)`` of the audit hook's watch on library source (review only):
    ``opened(path)`` remembers a library ``.py`` file opened while the student's code runs; ``copied(source)``: the
    source being compiled shares at least ``_COPIED_LINES`` lines (and a third of its own) with such a file, that is,
    library source read and compiled again, edited or not; ``library_files``: the files of the watched modules (a
    code object of one run by ``exec`` runs a copy of the module)."""
    import os

    root = os.path.dirname(os.path.dirname(torch.__file__)) + os.sep   # site-packages
    names = (*VERIFIED_MODULES, *LAYERS, *TORCH_MODULES, *WHOLE_MODULES, *KERAS_MODULES)
    library_files = frozenset(path for path in (getattr(sys.modules.get(name), "__file__", None) for name in names)
                              if path)
    realpath, read, bytes_type, length, Unreadable = os.path.realpath, open, bytes, len, OSError
    files, lines = [], set()
    limit, wanted = 64, 5

    def significant(source):
        return {line.strip() for line in source.splitlines() if length(line.strip()) >= 16
                and not line.strip().startswith("#")}

    def opened(path):
        if kind(path) is bytes_type:
            path = path.decode("utf-8", "replace")
        if kind(path) is not text or not path.endswith(".py") or length(files) >= limit:
            return
        local.inside = True
        try:
            path = realpath(path)
            if path.startswith(root) and path not in files:
                files.append(path)
                with read(path, encoding="utf-8", errors="replace") as fh:
                    lines.update(significant(fh.read(4 << 20)))
        except Unreadable:
            pass
        finally:
            local.inside = False

    def copied(source):
        if not lines:
            return False
        if kind(source) is bytes_type:
            source = source.decode("utf-8", "replace")
        if kind(source) is not text:
            return False
        own = significant(source)
        shared = length(own & lines)
        return shared >= wanted and 3 * shared >= length(own)

    return copied, opened, library_files, {significant.__code__, opened.__code__, copied.__code__}


def watch_scipy(emit, done):
    """scipy's softmax is numpy code that no torch kernel sees: wrapped (once imported) to report its use."""
    special = sys.modules.get("scipy.special")
    if special is None or done:
        return
    for name, label in SCIPY.items():
        original, token = getattr(special, name, None), (label + "\n").encode()
        if original is None:
            continue

        def wrapper(*args, _original=original, _token=token, **kwargs):
            emit(_token)
            return _original(*args, **kwargs)

        wrapper.__name__, wrapper.__doc__ = name, original.__doc__
        setattr(special, name, wrapper)
    done.append(True)

