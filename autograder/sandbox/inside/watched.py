"""What the forbidden-routine watch watches: the torch operators whose kernels report a routine, the kernels that
look for a Python-level library routine on the stack, the audit events refused to student code, the Keras layers and
scipy's routines of the rules, the review kinds, and every label the watch can report (``LABELS``).

Read once, when the watch is installed (``monitor.guard``) or a report is checked (``autograder.sandbox.logs``);
nothing here runs while the student's code does.
"""
import builtins as _builtins_module

# This module's own copy of the builtins, taken before any student code runs: a cell that patches ``builtins.any``,
# ``abs``, ``__import__``... changes the student's code, not the guard, the proxies or the wire format (a function
# looks its builtins up in its module's ``__builtins__``).
__builtins__ = dict(vars(_builtins_module))

import sys  # noqa: E402

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


def routine_codes():
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
