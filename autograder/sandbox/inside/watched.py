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

from .routines import Routine as R  # noqa: E402


def _plain(table):
    """``table`` with its labels (``Routine`` members, alone or second in a pair) as plain strings: nothing the
    student's code can reach while it runs is an enum member."""
    return {key: str(value) if isinstance(value, R) else (value[0], str(value[1])) for key, value in table.items()}


# The forbidden-routine rule, enforced where the student's code cannot switch it off (see ``guard``).
# aten operator -> what the trusted side calls it (every registered CPU-side kernel is replaced)
KERNEL_OPS = _plain({
    "_softmax": R.TORCH_SOFTMAX, "_softmax.out": R.TORCH_SOFTMAX, "_safe_softmax": R.TORCH_SOFTMAX,
    "_masked_softmax": R.TORCH_SOFTMAX, "_sparse_softmax": R.TORCH_SOFTMAX,
    "_nested_tensor_softmax_with_shape": R.TORCH_SOFTMAX,
    "_log_softmax": R.TORCH_LOG_SOFTMAX, "_log_softmax.out": R.TORCH_LOG_SOFTMAX,
    "_sparse_log_softmax": R.TORCH_LOG_SOFTMAX,
    "scaled_dot_product_attention": R.TORCH_SDPA,
    "_scaled_dot_product_attention_math": R.TORCH_SDPA,
    "_scaled_dot_product_flash_attention_for_cpu": R.TORCH_SDPA,
    "_native_multi_head_attention": R.TORCH_MULTI_HEAD_ATTENTION,
    "_transformer_encoder_layer_fwd": R.TORCH_MULTI_HEAD_ATTENTION,
    # normalisation layers (``layer_norm`` may not call them: each computes a layer norm over a reshaped input)
    "layer_norm": R.TORCH_LAYER_NORM, "native_layer_norm": R.TORCH_LAYER_NORM,
    "group_norm": R.TORCH_GROUP_NORM, "native_group_norm": R.TORCH_GROUP_NORM,
    "batch_norm": R.TORCH_BATCH_NORM, "native_batch_norm": R.TORCH_BATCH_NORM,
    "_native_batch_norm_legit": R.TORCH_BATCH_NORM, "_native_batch_norm_legit_no_training": R.TORCH_BATCH_NORM,
    "_batch_norm_with_update": R.TORCH_BATCH_NORM, "_batch_norm_no_update": R.TORCH_BATCH_NORM,
    "instance_norm": R.TORCH_BATCH_NORM,
    "rms_norm": R.TORCH_RMS_NORM, "_fused_rms_norm": R.TORCH_RMS_NORM,
    # the composite entry points too (``torch.softmax``, ``torch.special.softmax``, ``torch.quantized_batch_norm``):
    # they end at the kernels above, and being watched themselves is what the coverage test checks for a builtin
    "softmax": R.TORCH_SOFTMAX, "log_softmax": R.TORCH_LOG_SOFTMAX, "quantized_batch_norm": R.TORCH_BATCH_NORM,
    "special_softmax": R.TORCH_SOFTMAX, "special_log_softmax": R.TORCH_LOG_SOFTMAX,
    # torch.ao's quantized modules (``torch.ao.nn.quantized.LayerNorm``, ``Softmax``...) run these, on quantized
    # tensors only (the QuantizedCPU key)
    "quantized::softmax": R.TORCH_SOFTMAX, "quantized::layer_norm": R.TORCH_LAYER_NORM,
    "quantized::group_norm": R.TORCH_GROUP_NORM, "quantized::instance_norm": R.TORCH_BATCH_NORM,
    "quantized::batch_norm": R.TORCH_BATCH_NORM, "quantized::batch_norm1d": R.TORCH_BATCH_NORM,
    "quantized::batch_norm2d": R.TORCH_BATCH_NORM, "quantized::batch_norm3d": R.TORCH_BATCH_NORM,
    "quantized::batch_norm_relu": R.TORCH_BATCH_NORM, "quantized::batch_norm1d_relu": R.TORCH_BATCH_NORM,
    "quantized::batch_norm2d_relu": R.TORCH_BATCH_NORM, "quantized::batch_norm3d_relu": R.TORCH_BATCH_NORM,
})
# Kernels that every Python-level library routine of the rule reaches (matrix products, tanh, exp; the log-sum-exp
# and the sum over an axis of torch.distributions' normalisation; the triangles and running sums of torch's and Keras's
# causal masks): they report the routine when one of its functions is on the calling thread's stack. (Not an operator
# that takes a Python number as a tensor, such as ``div.Tensor``: a Python kernel is handed the number, not the
# wrapped tensor its original kernel expects.)
PROBE_OPS = ("mm", "bmm", "baddbmm", "addmm", "mv", "dot", "tanh", "exp", "rsqrt", "rsqrt_", "sqrt", "logsumexp",
             "sum.dim_IntList", "tril", "triu", "cumsum")
KEYS = ("CPU", "SparseCPU", "NestedTensorCPU", "MkldnnCPU", "QuantizedCPU", "CompositeImplicitAutograd",
         "CompositeExplicitAutograd", "FuncTorchBatchedDecomposition", "FuncTorchVmapMode")

RUNTIME_KEY = {"CompositeImplicitAutograd": "CPU", "CompositeExplicitAutograd": "CPU",
                "FuncTorchBatchedDecomposition": "FuncTorchBatched"}  # alias key -> the key its kernel is read at
REFUSED = {   # audit events refused to the student's code once its first cell runs
    "os.fork", "os.forkpty", "os.posix_spawn", "os.spawn", "os.system", "os.exec", "subprocess.Popen", "pty.spawn",
    "ctypes.dlopen", "ctypes.dlsym", "ctypes.dlsym/handle", "ctypes.cdata", "ctypes.cdata/buffer",
    "ctypes.call_function", "ctypes.string_at", "ctypes.wstring_at", "ctypes.addressof", "ctypes.PyObj_FromPtr",
    "gc.get_objects", "gc.get_referrers", "gc.get_referents", "sys.settrace", "sys.setprofile",
    "sys._current_frames", "sys._current_exceptions", "os.add_dll_directory",
}
FRAME_ATTRS = {"tb_frame", "gi_frame", "cr_frame", "ag_frame"}
LAYERS = _plain({   # Keras attention layers: module -> (class, label)
    "keras.src.layers.attention.attention": ("Attention", R.KERAS_ATTENTION),
    "keras.src.layers.attention.additive_attention": ("AdditiveAttention", R.KERAS_ADDITIVE_ATTENTION),
    "keras.src.layers.attention.multi_head_attention": ("MultiHeadAttention", R.KERAS_MULTI_HEAD_ATTENTION),
    "keras.src.layers.attention.grouped_query_attention": ("GroupedQueryAttention", R.KERAS_GROUP_QUERY_ATTENTION),
    # Keras normalisation layers (on torch they end at torch's kernels above, or at ``rsqrt`` where they do not)
    "keras.src.layers.normalization.layer_normalization": ("LayerNormalization", R.KERAS_LAYER_NORMALIZATION),
    "keras.src.layers.normalization.group_normalization": ("GroupNormalization", R.KERAS_GROUP_NORMALIZATION),
    "keras.src.layers.normalization.batch_normalization": ("BatchNormalization", R.KERAS_BATCH_NORMALIZATION),
    "keras.src.layers.normalization.rms_normalization": ("RMSNormalization", R.KERAS_RMS_NORMALIZATION),
    # statistics over the axes it is not given, then (x - mean) / sqrt(var): with ``axis=(0, 1)`` a layer norm
    "keras.src.layers.preprocessing.normalization": ("Normalization", R.KERAS_NORMALIZATION),
    # Keras's softmax layer and activation end at torch's softmax kernel; known by their code as well
    "keras.src.layers.activations.softmax": ("Softmax", R.TORCH_SOFTMAX),
})
# Python-level torch routines, each function and class of these modules whose name says what it computes
# (``torch_label``); the modules are imported when the watch is installed (the lane imports them once).
TORCH_MODULES = ("torch.nn.functional", "torch.nn.modules.activation", "torch.nn.modules.adaptive",
                  "torch.nn.modules.normalization",
                  "torch.nn.modules.batchnorm", "torch.nn.modules.instancenorm", "torch.nn.modules.transformer",
                  "torch.ao.nn.quantized.modules.activation", "torch.ao.nn.quantized.modules.normalization",
                  "torch.ao.nn.quantized.modules.batchnorm", "torch._refs", "torch._refs.nn.functional",
                  "torch._refs.special", "torch._decomp.decompositions", "torch._decomp.decompositions_for_jvp")
# Modules whose every function is the routine: flex attention (its eager path, the higher-order operator's dense
# implementation), torch.ao's quantizable multi-head attention (``torch.ao.nn.quantizable.MultiheadAttention``) and
# torch's causal attention biases (``torch.nn.attention.bias``: ``CausalBias``, ``causal_lower_right``...: their
# ``_materialize`` is a causal mask).
WHOLE_MODULES = _plain({"torch.nn.attention.bias": R.TORCH_CAUSAL_MASK,
                  "torch.nn.attention.flex_attention": R.TORCH_SDPA,
                  "torch._higher_order_ops.flex_attention": R.TORCH_SDPA,
                  "torch.ao.nn.quantizable.modules.activation": R.TORCH_MULTI_HEAD_ATTENTION,
                  # variable-length, paged and quantized SDPA and the flash back ends' Python (GPU kernels today)
                  "torch.nn.attention.varlen": R.TORCH_SDPA,
                  "torch.nn.attention.experimental._paged_attention": R.TORCH_SDPA,
                  "torch.nn.attention.experimental._scaled_dot_product_attention_quantized":
                      R.TORCH_SDPA,
                  "torch.nn.attention._fa3": R.TORCH_SDPA,
                  "torch.nn.attention._fa4": R.TORCH_SDPA,
                  "torch.nn.attention._registry": R.TORCH_SDPA})
# Routines named one by one, each whole (a class: all its methods), after the tables above (a name here wins): module
# -> (names, label). torch.distributions' categorical family normalises the logits it is given (``logits -
# logits.logsumexp(-1)``) or the probabilities (``probs / probs.sum(-1)``): ``Categorical(logits=x).logits.exp()`` is
# a softmax. torch's and Keras's square causal masks are causal masks.
NAMED = {module: (names, str(label)) for module, (names, label) in {
    "torch.distributions.categorical": (("Categorical",), R.TORCH_LOG_SOFTMAX),
    "torch.distributions.one_hot_categorical": (("OneHotCategorical", "OneHotCategoricalStraightThrough"),
                                                 R.TORCH_LOG_SOFTMAX),
    "torch.distributions.multinomial": (("Multinomial",), R.TORCH_LOG_SOFTMAX),
    "torch.distributions.relaxed_categorical": (("ExpRelaxedCategorical", "RelaxedOneHotCategorical"),
                                                R.TORCH_LOG_SOFTMAX),
    "torch.distributions.utils": (("logits_to_probs", "probs_to_logits"), R.TORCH_LOG_SOFTMAX),
    "torch.nn.modules.transformer": (("_generate_square_subsequent_mask",
                                      "Transformer.generate_square_subsequent_mask"), R.TORCH_CAUSAL_MASK),
    "keras.src.layers.attention.multi_head_attention": (("MultiHeadAttention._compute_causal_mask",),
                                                        R.KERAS_CAUSAL_MASK),
    "keras.src.layers.attention.grouped_query_attention": (("GroupedQueryAttention._compute_causal_mask",),
                                                           R.KERAS_CAUSAL_MASK),
    "keras.src.layers.attention.attention": (("Attention._calculate_score_mask",), R.KERAS_CAUSAL_MASK),
}.items()}
# Keras's ops and activations: name fragment -> label (checked in this order)
KERAS_MODULES = ("keras.src.ops.nn", "keras.src.backend.torch.nn", "keras.src.activations.activations",
                  "keras.src.layers.activations.softmax")
# Library routines known by their code compiled from the installed source, never imported here: (package, file in
# it) -> {top-level class or function: label}. A class stands for every function defined in its body. Neither
# library is imported in the student's process unless the student's code imports it (transformers' Qwen3 takes ~3 s),
# and a routine is known by its code's content (``recognise.py``), so the code compiled from the same file is the
# code the student's import runs. A package that is not installed has nothing to watch.
SOURCE_ROUTINES = {
    ("transformers", "models/qwen3/modeling_qwen3.py"): _plain({
        "Qwen3RMSNorm": R.TRANSFORMERS_QWEN3_NORM, "Qwen3MLP": R.TRANSFORMERS_QWEN3_MLP,
        "Qwen3Attention": R.TRANSFORMERS_QWEN3_ATTENTION, "eager_attention_forward": R.TRANSFORMERS_QWEN3_ATTENTION,
        "apply_rotary_pos_emb": R.TRANSFORMERS_QWEN3_ATTENTION, "repeat_kv": R.TRANSFORMERS_QWEN3_ATTENTION,
        "Qwen3DecoderLayer": R.TRANSFORMERS_QWEN3_DECODER, "Qwen3Model": R.TRANSFORMERS_QWEN3_DECODER,
        "Qwen3ForCausalLM": R.TRANSFORMERS_QWEN3_DECODER}),
    ("keras_hub", "src/models/qwen3/qwen3_layernorm.py"): _plain({"Qwen3LayerNorm": R.KERAS_HUB_QWEN3_NORM}),
    ("keras_hub", "src/models/qwen3/qwen3_attention.py"): _plain({"Qwen3Attention": R.KERAS_HUB_QWEN3_ATTENTION}),
    ("keras_hub", "src/models/qwen3/qwen3_decoder.py"): _plain({
        "Qwen3TransformerDecoder": R.KERAS_HUB_QWEN3_DECODER}),
    ("keras_hub", "src/models/qwen3/qwen3_backbone.py"): _plain({"Qwen3Backbone": R.KERAS_HUB_QWEN3_DECODER}),
    ("keras_hub", "src/models/qwen3/qwen3_causal_lm.py"): _plain({"Qwen3CausalLM": R.KERAS_HUB_QWEN3_DECODER}),
}
# scipy.special's routines, wrapped (``watch_scipy``): name -> label
SCIPY = _plain({"softmax": R.SCIPY_SOFTMAX, "log_softmax": R.SCIPY_LOG_SOFTMAX})
# Audit events reported once each for the instructor's review (as ``review:<kind>`` lines): making a code object
# (``types.CodeType``, ``code.replace``), a function from one (``types.FunctionType``), replacing a function's code.
REVIEWED_EVENTS = {"code.__new__": "code.__new__", "function.__new__": "function.__new__",
                    "object.__setattr__": "function.__code__"}
# What the guard itself finds (``monitor.guard``'s ``verify`` and audit hook): a watched library module, class or
# kernel registration changed since the watch was installed; library source compiled or a library module run again.
CHANGED, SOURCE = "library.changed", "library.source"
HANDLER = "signal.handler"   # a Python signal handler of the student's was installed when a guard kernel ran
GENERATED = "library.traced"   # torch.fx generated code from a trace that ran a watched routine (``monitor.fx_watch``)
REVIEWS = frozenset({*REVIEWED_EVENTS.values(), CHANGED, SOURCE, HANDLER, GENERATED})   # every review kind it reports
# The library as it was when the watch was installed, verified before and after every graded call: these modules'
# and classes' functions, classes and submodules (a replaced ``ops`` of Keras's attention module, a patched
# ``torch.matmul``), and the guard's kernels still reached by torch's own entry points (a kernel registered over
# them, a ``torch.library._impls`` cleared so that one can be). A change costs every call it is seen in
# (``TAMPERED``, in every rule) and is listed for review.
VERIFIED_MODULES = ("torch", "torch.nn.functional", "torch.special", "torch.linalg", "torch.library",
                     "torch.nn.modules.linear", "keras.src.backend", "keras.src.backend.torch",
                     "keras.src.backend.torch.numpy", "keras.src.backend.torch.core", "keras.src.backend.torch.math",
                     "keras.src.ops", "keras.src.ops.numpy", "keras.src.ops.core", "keras.src.ops.math",
                     "keras.src.ops.linalg", "keras.src.ops.operation")
TAMPERED = str(R.LIBRARY_CHANGED)
# Every label this monitor can report; a grader's rule naming another could never see it
# (tests/sandbox/live/test_policy.py).
LABELS = frozenset(str(label) for label in (
    *KERNEL_OPS.values(), *(label for _, label in LAYERS.values()), R.KERAS_DOT_PRODUCT_ATTENTION,
    *(label for table in SOURCE_ROUTINES.values() for label in table.values()),
    R.KERAS_NORMALIZATION_OPS, *WHOLE_MODULES.values(), *(label for _, label in NAMED.values()), TAMPERED,
    R.TORCH_MULTI_HEAD_ATTENTION, R.TORCH_LOG_SOFTMAX, R.TORCH_SOFTMAX, R.TORCH_SDPA, *SCIPY.values()))


def torch_label(name):
    """The label of a torch routine by what its name says it computes, or None."""
    low = name.lower().replace("_", "")
    for fragment, label in (("logsoftmax", R.TORCH_LOG_SOFTMAX), ("softmax", R.TORCH_SOFTMAX),
                            ("softmin", R.TORCH_SOFTMAX), ("multihead", R.TORCH_MULTI_HEAD_ATTENTION),
                            ("transformer", R.TORCH_MULTI_HEAD_ATTENTION),
                            ("attention", R.TORCH_SDPA), ("layernorm", R.TORCH_LAYER_NORM),
                            ("groupnorm", R.TORCH_GROUP_NORM), ("rmsnorm", R.TORCH_RMS_NORM),
                            ("batchnorm", R.TORCH_BATCH_NORM), ("instancenorm", R.TORCH_BATCH_NORM)):
        if fragment in low:
            return str(label)
    return None


def keras_label(name):
    """The label of a Keras op or activation by its name, or None (``normalize``, an L2 normalisation, is not one)."""
    low = name.lower().replace("_", "")
    for fragment, label in (("logsoftmax", R.TORCH_LOG_SOFTMAX), ("softmax", R.TORCH_SOFTMAX),
                            ("attention", R.KERAS_DOT_PRODUCT_ATTENTION),
                            ("normalization", R.KERAS_NORMALIZATION_OPS), ("layernorm", R.KERAS_NORMALIZATION_OPS),
                            ("rmsnorm", R.KERAS_NORMALIZATION_OPS), ("batchnorm", R.KERAS_NORMALIZATION_OPS)):
        if fragment in low:
            return str(label)
    return None


def import_watched():
    """Import every module whose routines the watch knows by their code (once per lane: ``lane.WARM_MODULES``), so
    that a routine the student imports later is known too."""
    import importlib

    for name in (*LAYERS, *TORCH_MODULES, *WHOLE_MODULES, *KERAS_MODULES, *NAMED):
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a module this torch or Keras lacks has no routine to watch
            pass
    if not _COMPILED:
        _COMPILED.update(source_codes())


def routine_codes():
    """``{code object: routine}`` of the Python-level library routines of the rule: Keras's attention and
    normalisation layers and their internals, Keras's ops and activations (``keras_label``), torch's functions and
    modules whose names say they compute one (``torch_label``: ``torch.nn.functional``, ``torch.nn``'s and
    ``torch.ao``'s modules, the decompositions of ``torch._refs``/``torch._decomp``), flex attention and torch.ao's
    quantizable multi-head attention (every function of their modules)."""
    import inspect

    found, wrappers = {}, {}

    def add(obj, label):
        obj = getattr(obj, "_init_fn", obj)   # a custom operator (torch.library.custom_op): its Python function
        for fn in ([obj] if inspect.isfunction(obj) else
                   [getattr(v, "__func__", v) for v in vars(obj).values()] if inspect.isclass(obj) else []):
            if isinstance(fn, property):
                fn = fn.fget
            inner = inspect.unwrap(fn) if inspect.isfunction(fn) else fn
            if inner is not fn:   # a decorator's wrapper: its code may be shared by routines of other rules
                wrappers.setdefault(getattr(fn, "__code__", None), set()).add(label)
            code = getattr(inner, "__code__", None)
            if code is not None:
                found[code] = label

    def module(name):
        return sys.modules.get(name)

    for name, (cls, label) in LAYERS.items():
        if module(name) is not None and hasattr(module(name), cls):
            add(getattr(module(name), cls), label)
    for name in KERAS_MODULES:
        for attr, value in vars(module(name) or object).items() if module(name) else ():
            label = keras_label(attr)
            if label:
                add(value, label)
    for name in TORCH_MODULES:
        for attr, value in vars(module(name) or object).items() if module(name) else ():
            label = torch_label(attr)
            if label:
                add(value, label)
    for name, label in WHOLE_MODULES.items():
        for value in vars(module(name) or object).values() if module(name) else ():
            if getattr(getattr(value, "_init_fn", value), "__module__", None) == name:
                add(value, label)
    for name, (names, label) in NAMED.items():
        for dotted in names if module(name) else ():
            value = module(name)
            for part in dotted.split("."):
                value = getattr(value, part, None)
            if value is not None:
                add(value, label)
    # a wrapper's code is known only when all it wraps are one routine (torch._decomp's ``out_wrapper`` wraps
    # decompositions of every rule; the function it wraps is on the stack beneath it anyway)
    for code, labels in wrappers.items():
        if code is not None and code not in found and len(labels) == 1:
            found[code] = next(iter(labels))
    found.update(_COMPILED or source_codes())
    return found


_COMPILED = {}   # ``source_codes()``, compiled once in a lane's warm process (``import_watched``), before any fork


def source_codes():
    """``{code object: label}`` of ``SOURCE_ROUTINES``: each file compiled (not run), the code of every function of a
    named class's body (nested functions too) or of a named function (~0.1 s: compiled once per lane)."""
    import importlib.util
    import os

    found = {}

    def functions(code, label):
        for const in code.co_consts:
            if type(const) is type(code):
                found[const] = label
                functions(const, label)

    for (package, path), names in SOURCE_ROUTINES.items():
        try:
            spec = importlib.util.find_spec(package)   # a top-level package: found, not imported
            folder = spec.submodule_search_locations[0] if spec and spec.submodule_search_locations else None
            with open(os.path.join(folder, path), encoding="utf-8") as source:
                module = compile(source.read(), os.path.join(folder, path), "exec")
        except (OSError, TypeError, ValueError, SyntaxError, ImportError):
            continue   # not installed (or not this version's layout): nothing of it can run
        for const in module.co_consts:
            if type(const) is type(module) and const.co_name in names:
                label = names[const.co_name]
                if const.co_flags & 0x2:     # a function (CO_NEWLOCALS; a class body has not): its own code too
                    found[const] = label
                functions(const, label)
    return found
