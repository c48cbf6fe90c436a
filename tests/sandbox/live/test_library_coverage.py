"""Every attention, normalisation and softmax routine that the installed torch and Keras ship is in the rules.

The routines are enumerated from the installed packages (every module of ``torch.nn``, ``torch.ao.nn``, flex
attention, ``torch``'s own namespaces, ``keras.src``'s layers, ops, activations and backends), by what their names
say, so that a new version's additions fail this test until the watch knows them or ``ALLOWED`` says why they may
stay. A routine is covered when

* it is Python code that the watch knows by its code (``watched.routine_codes``: reported when one of its frames is
  on the stack while a matrix product, ``exp``, ``tanh``, ``sqrt`` or ``rsqrt`` kernel runs), for a class any of
  its own methods;
* it is a builtin whose operator's kernels the guard replaces (``watched.KERNEL_OPS``), or whose operator has no
  kernel that runs on the CPU (the sandbox has no GPU: calling it fails there);
* ``ALLOWED`` names it, with the reason.

Each covered label must also be in a rule (``forbidden``), or the watch would report what no grader reads.
"""
from __future__ import annotations

import importlib
import inspect
import pkgutil
import re
import sys

import pytest

from autograder.graders import forbidden
from autograder.sandbox.inside import watched

# What the names of the routines of the rules contain (a random normal, ``denormal``, is not one).
PATTERN = re.compile(r"attention|attn|softmax|softmin|norm(?!al(?!i[sz]))", re.IGNORECASE)

# Packages walked (every submodule that imports), and namespaces read as they are.
PACKAGES = ("torch.nn", "torch.ao.nn", "torch._higher_order_ops.flex_attention", "keras.src.layers", "keras.src.ops",
            "keras.src.activations", "keras.src.backend.torch", "keras.src.backend.numpy")
NAMESPACES = ("torch", "torch.special", "torch.sparse", "torch.nested", "torch.linalg", "torch._C._nn",
              "torch.nn.functional", "keras.layers", "keras.ops", "keras.ops.nn", "keras.activations")

NORM_OF_A_TENSOR = "a tensor's norm (a reduction to one number per slice), not a normalisation layer"
ALLOWED = {   # regular expression on "module.name" -> why it may stay out of the rules
    r"(^|\.)(norm|Norm|_foreach_norm|frobenius_norm|nuclear_norm|native_norm|norm_except_dim|vector_norm|matrix_norm"
    r"|_linalg_vector_norm|linalg_norm|get_total_norm|_get_total_norm)$": NORM_OF_A_TENSOR,
    r"(^|\.)(renorm|embedding_renorm_|_no_grad_embedding_renorm_|max_norm)$":
        "rescales rows whose norm is over a bound (embeddings' max_norm), not a normalisation layer",
    r"(^|\.)(clip_grad_norm_?|clip_grads_with_norm_|_clip_grads_with_norm_|clip_grad_norm_fn)$":
        "clips gradients during training; no forward computation of the exercises",
    r"(^|\.)(normalize|_normalize|Normalize|unit_normalization|UnitNormalization|l2_normalize)$":
        "divides by the L2 norm (no mean subtracted, no variance): not a layer norm",
    r"(^|\.)(weight_norm|_weight_norm|_weight_norm_interface|remove_weight_norm|WeightNorm|_WeightNorm|spectral_norm"
    r"|SpectralNorm|remove_spectral_norm|SpectralNormalization|SpectralNormStateDictHook"
    r"|SpectralNormLoadStateDictPreHook|_SpectralNorm|SpectralNormalization)$":
        "reparametrises a layer's weights (w = g v / ||v||, w / sigma(w)); the activations are not normalised",
    r"(^|\.)(local_response_norm|LocalResponseNorm|CrossMapLRN2d)$":
        "divides each channel by a sum of squares over neighbouring channels (AlexNet's LRN): no mean, no variance "
        "over the feature axis",
    r"(^|\.)(_softmax_backward_data|_log_softmax_backward_data|_sparse_softmax_backward_data"
    r"|_sparse_log_softmax_backward_data|.*_backward(_out)?|.*_backward_data|_broadcast_batch_norm_backward"
    r"|batch_norm_backward_elemt|batch_norm_backward_reduce)$":
        "a gradient (needs the forward's output as an input): computes no forward result",
    r"(^|\.)(_get_softmax_dim|_can_use_flash_attention|can_use_flash_attention|can_use_efficient_attention"
    r"|is_flash_attention_available|_FLEX_ATTENTION_DISABLE_COMPILE_DEBUG|_normalize_start_end|_canonical_mask"
    r"|_mha_shape_check|_none_or_dtype|_get_large_negative|_check_arg_device|_arg_requires_grad"
    r"|_get_batch_norm_reserve_tensor|_apply_kernel_options|_validate_sdpa_input|_raise_kernel_warnings"
    r"|normalize_axis_index|normalize_axis_tuple|_normalize_axis|normalize_tuple|standardize_.*|_sdpa_.*"
    r"|SDPAParams|SDPBackend|_SDPBackend|sdpa_kernel|_sdpa_kernel|WARN_FOR_UNFUSED_KERNELS"
    r"|activate_flash_attention_impl|current_flash_attention_impl|list_flash_attention_impls"
    r"|register_flash_attention_impl|restore_flash_attention_impl|_FlashAttentionImpl|_cur_sdpa_kernel_backends"
    r"|_get_flash_attention_impl|_flash_attention_impl_.*)$":
        "a helper that computes no attention, norm or softmax (a shape, an axis, a flag, a backend's name, a check)",
    r"(^|\.)(batchnorm|instancenorm|normalization|_batch_norm_impl_index|_functions|fused_rms_norm_fallback"
    r"|_NormBase|_BatchNorm|_LazyNormBase|_InstanceNorm)$":
        "a module's name or an abstract base (its concrete classes are enumerated and covered themselves)",
    r"(^|\.)(SyncBatchNorm|cudnn_batch_norm|miopen_batch_norm|batch_norm_gather_stats"
    r"|batch_norm_gather_stats_with_counts|batch_norm_stats|batch_norm_update_stats|batch_norm_elemt)$":
        "a GPU-only batch norm (CUDA, cuDNN, MIOpen, distributed): the sandbox has no GPU",
    r"(^|\.)(GroupNormPerSampleGrad|InstanceNormPerSampleGrad|LayerNormPerSampleGrad)$":
        "per-sample-gradient wrappers (autograd functions) whose forward calls torch.nn.functional's norm, which "
        "ends at the norm kernels",
    r"(^|\.)(is_flash_attention_enabled|_build_attention_equation|conv_normalizer|_compute_norm|_varlen_attn\w*_flop)$":
        "a helper that computes no attention, norm or softmax (a flag, an einsum equation, a pruning score, a FLOP "
        "count)",
}


def _modules():
    names = set(NAMESPACES)
    for package in PACKAGES:
        try:
            root = importlib.import_module(package)
        except ImportError:   # not installed (keras's numpy backend without scipy): nothing of it can be called
            continue
        names.add(package)
        for info in pkgutil.walk_packages(getattr(root, "__path__", []), package + "."):
            if info.name.endswith("_test") or any(part in info.name
                                                  for part in (".tests", ".testing", "tensorflow", "jax")):
                continue
            names.add(info.name)
    modules = {}
    for name in sorted(names):
        try:
            modules[name] = importlib.import_module(name)
        except Exception:  # noqa: BLE001 - a module that does not import cannot be used by a student either
            continue
    return modules


def enumerate_routines():
    """``{"module.name": object}`` of every function, builtin and class that the walked modules define or export
    whose name matches ``PATTERN``."""
    found = {}
    for name, module in _modules().items():
        for attr, value in list(vars(module).items()):
            if not PATTERN.search(attr) or inspect.ismodule(value):
                continue
            if not (inspect.isfunction(value) or inspect.isclass(value) or inspect.isbuiltin(value)
                    or callable(value)):
                continue
            found[f"{name}.{attr}"] = value
    return found


def _allowed(qualified: str) -> str | None:
    for pattern, why in ALLOWED.items():
        if re.search(pattern, qualified):
            return why
    return None


def _runs_on_cpu(op: str) -> bool:
    import torch

    try:
        dump = torch._C._dispatch_dump(op)
    except RuntimeError:
        return False
    keys = {line.split(":")[0].replace("[alias]", "").strip() for line in dump.splitlines()
            if ": registered at" in line and "(inactive)" not in line}
    return bool(keys & set(watched.KEYS))


def covered(value, codes) -> bool:
    """Whether the watch sees ``value`` when it runs (see the module's docstring)."""
    if inspect.isclass(value):
        own = [getattr(v, "__func__", v) for v in vars(value).values()]
        own = [v.fget if isinstance(v, property) else v for v in own]
        return any(getattr(inspect.unwrap(f) if inspect.isfunction(f) else f, "__code__", None) in codes for f in own)
    value = getattr(value, "_init_fn", value)   # a custom operator: its Python function
    if inspect.isfunction(value):
        return value.__code__ in codes or inspect.unwrap(value).__code__ in codes
    op = getattr(value, "__name__", "")
    if not op:
        return False
    kernel_ops = {name if "::" in name else f"aten::{name}" for name in watched.KERNEL_OPS}
    aten = f"aten::{op}"
    return aten in kernel_ops or not _runs_on_cpu(aten)


@pytest.fixture(scope="module")
def routines():
    import keras  # noqa: F401 - its layers and ops are among what is enumerated

    watched.import_watched()
    return enumerate_routines()


def test_the_enumeration_finds_the_known_routines(routines):
    """The walk reaches every place a routine of the rules is known to live (a walk that found nothing would pass)."""
    names = set(routines)
    for expected in ("torch.nn.functional.scaled_dot_product_attention",
                     "torch.nn.attention.flex_attention.flex_attention",
                     "torch.ao.nn.quantizable.MultiheadAttention", "torch.nn.modules.activation.MultiheadAttention",
                     "torch.layer_norm", "torch.special.softmax", "keras.layers.MultiHeadAttention",
                     "keras.ops.dot_product_attention", "keras.src.backend.torch.nn.dot_product_attention",
                     "keras.layers.Normalization", "keras.src.ops.nn.LayerNorm"):
        assert expected in names, expected
    assert len(names) > 150, len(names)


def test_every_attention_norm_and_softmax_routine_is_watched_or_allowed(routines):
    codes = watched.routine_codes()
    missing = sorted(q for q, value in routines.items() if not covered(value, codes) and _allowed(q) is None)
    assert not missing, ("library routines that no rule watches (add them to the watch, sandbox/inside/watched.py, "
                         f"or to ALLOWED with the reason): {missing}")


def test_the_allow_list_is_not_stale(routines):
    """Every allow-list entry still matches an enumerated routine that the watch does not cover."""
    codes = watched.routine_codes()
    uncovered = [q for q, value in routines.items() if not covered(value, codes)]
    stale = [pattern for pattern in ALLOWED if not any(re.search(pattern, q) for q in uncovered)]
    assert not stale, stale


def test_every_watched_label_is_in_a_rule():
    """What the watch can report about these routines is forbidden by some exercise's rule (a label no rule names
    would be seen and then ignored)."""
    rules = [value for value in vars(forbidden).values() if isinstance(value, forbidden.Rule)]
    assert {forbidden.SOFTMAX, forbidden.ATTENTION, forbidden.NORM, forbidden.BLOCK, forbidden.CAUSAL,
            forbidden.RMS_NORM, forbidden.QWEN3_ATTENTION} <= set(rules)
    in_rules = set().union(*(rule.labels for rule in rules))
    labels = set(watched.routine_codes().values()) | set(watched.KERNEL_OPS.values())
    assert labels <= in_rules, sorted(labels - in_rules)


def test_flex_attention_and_quantizable_mha_are_in_the_rules():
    """The two routines of the round-3 report: their code is known, with the labels the rules forbid."""
    import torch.ao.nn.quantizable as quantizable
    from torch.nn.attention.flex_attention import flex_attention

    codes = watched.routine_codes()
    assert codes[inspect.unwrap(flex_attention).__code__] in forbidden.ATTENTION.labels
    forward = quantizable.MultiheadAttention.forward.__code__
    assert codes[forward] in forbidden.ATTENTION.labels & forbidden.BLOCK.labels
    assert {"flex_attention", "MultiheadAttention"} <= forbidden.ATTENTION.names
    assert sys.modules["torch.nn.attention.flex_attention"]


# ----------------------------------------------------------------------------------------------- seen at run time
# Every public Python road to the kernels the rules forbid, and the Python-level routines the watch knows by their code,
# called in a student's process under the real guard as a graded call is: each must be seen (a label of its rule in the
# call's events). The roads are listed from the installed packages (every attribute of these names in torch's
# namespaces, every overload of the operators in ``torch.ops.aten``, the module classes, Keras's ops and layers), plus
# the roads that leave no library frame in the call: code that torch.fx generated from them at notebook time (make_fx
# real and symbolic with torch's decompositions, pre_dispatch, torch.export; a deep copy of the graph module; its
# source compiled again). Honest roads (the student's own softmax, layer norm and mask, torch.logsumexp, make_fx of the
# student's own code) must be seen as nothing.
ROUTES_CELL = r'''
import copy
import functools
import keras
import numpy as np
import torch
import torch.nn.functional as F
from torch.fx.experimental.proxy_tensor import make_fx
from torch._decomp import get_decompositions

torch.manual_seed(0)
x, q = torch.randn(3, 5), torch.randn(1, 2, 3, 4)
e = torch.randn(2, 3, 8)
aten = torch.ops.aten
OPERATORS = {   # operator name -> (its rule, how to call it)
    "softmax": ("softmax", lambda f: f(x, -1)), "_softmax": ("softmax", lambda f: f(x, -1, False)),
    "log_softmax": ("softmax", lambda f: f(x, -1)), "_log_softmax": ("softmax", lambda f: f(x, -1, False)),
    "softmin": ("softmax", lambda f: f(x, -1)), "special_softmax": ("softmax", lambda f: f(x, -1)),
    "special_log_softmax": ("softmax", lambda f: f(x, -1)), "_safe_softmax": ("softmax", lambda f: f(x, -1)),
    "layer_norm": ("norm", lambda f: f(x, [5])),
    "native_layer_norm": ("norm", lambda f: f(x, [5], None, None, 1e-5)),
    "scaled_dot_product_attention": ("attention", lambda f: f(q, q, q)),
    "_scaled_dot_product_attention_math": ("attention", lambda f: f(q, q, q)),
    "_scaled_dot_product_flash_attention_for_cpu": ("attention", lambda f: f(q, q, q)),
    "_native_multi_head_attention": ("block", lambda f: f(e, e, e, 8, 2, torch.randn(24, 8), torch.randn(24),
                                                            torch.randn(8, 8), torch.randn(8))),
}
NAMESPACES = {"torch": torch, "torch.nn.functional": F, "torch.special": torch.special,
              "torch._C._VariableFunctions": torch._C._VariableFunctions, "torch._C._nn": torch._C._nn}
ROUTES = {}   # name -> (rule, a function of no argument)
for op, (rule, call) in OPERATORS.items():
    for where, namespace in NAMESPACES.items():
        if callable(getattr(namespace, op, None)):
            ROUTES[f"{where}.{op}"] = (rule, functools.partial(call, getattr(namespace, op)))
    if callable(getattr(torch.Tensor, op, None)):
        method = functools.partial(lambda t, *a, _op=op, **k: getattr(t, _op)(*a, **k))
        ROUTES[f"torch.Tensor.{op}"] = (rule, functools.partial(call, method))
    packet = getattr(aten, op, None)
    for overload in packet.overloads() if packet is not None else ():
        if overload in ("default", "int"):
            ROUTES[f"torch.ops.aten.{op}.{overload}"] = (rule, functools.partial(call, getattr(packet, overload)))
        elif overload == "out" and rule == "softmax" and op.startswith("_"):
            ROUTES[f"torch.ops.aten.{op}.out"] = (rule, lambda f=getattr(packet, overload): f(x, -1, False,
                                                                                             out=torch.empty_like(x)))
ROUTES.update({
    "torch.nn.Softmax": ("softmax", lambda: torch.nn.Softmax(-1)(x)),
    "torch.nn.LogSoftmax": ("softmax", lambda: torch.nn.LogSoftmax(-1)(x)),
    "torch.nn.Softmin": ("softmax", lambda: torch.nn.Softmin(-1)(x)),
    "torch.vmap(torch.softmax)": ("softmax", lambda: torch.vmap(lambda r: torch.softmax(r, -1))(x)),
    "keras.ops.softmax": ("softmax", lambda: keras.ops.softmax(x)),
    "keras.ops.log_softmax": ("softmax", lambda: keras.ops.log_softmax(x)),
    "keras.activations.softmax": ("softmax", lambda: keras.activations.softmax(x)),
    "keras.layers.Softmax": ("softmax", lambda: keras.layers.Softmax()(x)),
    "torch.nn.LayerNorm": ("norm", lambda: torch.nn.LayerNorm(5)(x)),
    "keras.layers.LayerNormalization": ("norm", lambda: keras.layers.LayerNormalization()(x)),
    "keras.ops.layer_normalization": ("norm", lambda: keras.ops.layer_normalization(x)),
    "keras.ops.dot_product_attention": ("attention", lambda: keras.ops.dot_product_attention(q, q, q)),
    "torch.nn.MultiheadAttention": ("block", lambda: torch.nn.MultiheadAttention(8, 2, batch_first=True)(e, e, e)),
    "torch.nn.TransformerEncoderLayer": ("block", lambda: torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0,
                                                                                          batch_first=True)(e)),
    "keras.layers.MultiHeadAttention": ("block", lambda: keras.layers.MultiHeadAttention(2, 4)(e, e)),
})
# torch.distributions' categorical family and torch's causal masks (Python, known by their code)
for name, cls in (("Categorical", torch.distributions.Categorical),
                  ("OneHotCategorical", torch.distributions.OneHotCategorical),
                  ("OneHotCategoricalStraightThrough", torch.distributions.OneHotCategoricalStraightThrough),
                  ("Multinomial", functools.partial(torch.distributions.Multinomial, 3)),
                  ("RelaxedOneHotCategorical", functools.partial(torch.distributions.RelaxedOneHotCategorical, 0.5)),
                  ("ExpRelaxedCategorical",
                   functools.partial(torch.distributions.relaxed_categorical.ExpRelaxedCategorical, 0.5))):
    ROUTES[f"torch.distributions.{name}(logits)"] = ("softmax", lambda cls=cls: cls(logits=x).logits.exp())
    ROUTES[f"torch.distributions.{name}(probs)"] = ("softmax", lambda cls=cls: cls(probs=x.exp()).probs)
ROUTES["torch.distributions.utils.logits_to_probs"] = ("softmax", lambda: torch.distributions.utils.logits_to_probs(x))
import torch.nn.attention.bias as bias
ROUTES.update({
    "CausalBias._materialize": ("causal", lambda: bias.CausalBias(bias.CausalVariant.LOWER_RIGHT, 3, 5)._materialize()),
    "causal_lower_right": ("causal", lambda: bias.causal_lower_right(3, 5)._materialize()),
    "causal_upper_left": ("causal", lambda: bias.causal_upper_left(3, 5)._materialize()),
    "nn.Transformer.generate_square_subsequent_mask": ("causal",
                                                       lambda: torch.nn.Transformer.generate_square_subsequent_mask(4)),
    "keras MultiHeadAttention._compute_causal_mask": (
        "causal", lambda: keras.layers.MultiHeadAttention(2, 4)._compute_causal_mask(e)),
})
# code that torch.fx generated at notebook time from the library's routines, kept and called later
DECOMPOSITIONS = get_decompositions([aten._softmax, aten._log_softmax, aten.native_layer_norm])
TRACED = {"softmax": lambda t: aten._softmax(t, -1, False), "log_softmax": lambda t: aten._log_softmax(t, -1, False),
          "norm": lambda t: aten.native_layer_norm(t, [5], None, None, 1e-5)[0]}
for mode in ("real", "symbolic"):   # (fake tensors trace as symbolic ones do, with the shapes fixed)
    for what, fn in TRACED.items():
        graph = make_fx(fn, decomposition_table=DECOMPOSITIONS, tracing_mode=mode)(x)
        rule = "norm" if what == "norm" else "softmax"
        ROUTES[f"make_fx({mode}) of torch's {what} decomposition"] = (rule, functools.partial(graph, x))
layer = torch.nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0, batch_first=True, norm_first=True).eval()
block = make_fx(lambda t: layer(t), pre_dispatch=True)(e)
ROUTES["make_fx(pre_dispatch) of TransformerEncoderLayer"] = ("block", functools.partial(block, e))
ROUTES["copy.deepcopy of that graph module"] = ("block", functools.partial(copy.deepcopy(block), e))
exported = torch.export.export(torch.nn.MultiheadAttention(8, 2, batch_first=True).eval(), (e, e, e)).module()
ROUTES["torch.export of MultiheadAttention, .module()"] = ("block", lambda: exported(e, e, e))
again = {"torch": torch}
exec(compile(ROUTES["make_fx(real) of torch's softmax decomposition"][1].func.code, "<pasted>", "exec"), again)
ROUTES["the generated softmax's source compiled again"] = ("softmax", lambda: again["forward"](None, x))
# honest roads: nothing of a rule
own = make_fx(lambda t: torch.exp(t - t.amax(-1, keepdim=True)) / torch.exp(t - t.amax(-1, keepdim=True)).sum(-1,
                                                                                                    keepdim=True))(x)
HONEST = {
    "own softmax": lambda: torch.exp(x - x.amax(-1, keepdim=True)) / torch.exp(x - x.amax(-1, keepdim=True)).sum(
        -1, keepdim=True),
    "own log-sum-exp softmax": lambda: torch.exp(x - torch.logsumexp(x, -1, keepdim=True)),
    "own layer norm": lambda: (x - x.mean(-1, keepdim=True)) * torch.rsqrt(x.var(-1, unbiased=False, keepdim=True)
                                                                            + 1e-5),
    "own causal mask": lambda: torch.ones(3, 5, dtype=torch.bool).tril(2),
    "make_fx of own softmax": functools.partial(own, x),
}


def route(name):
    function = HONEST[name] if name in HONEST else ROUTES[name][1]
    function()
    return name


def rules():
    return {name: rule for name, (rule, _) in ROUTES.items()}


def switch_off_the_fx_watch():   # torch.fx's own create_node again, taken from the guard's wrapper
    hook = torch.fx.Graph.create_node
    torch.fx.Graph.create_node = next(c.cell_contents for c in hook.__closure__ if c.cell_contents is not hook
                                      and getattr(c.cell_contents, "__name__", "") == "create_node")
    return True
'''


def test_every_road_to_a_watched_routine_is_seen_at_run_time():
    """Every road of ``ROUTES_CELL`` is seen in a graded call with a label of its rule, no honest road is seen, and
    switching the guard's torch.fx watch off (its wrapper replaced by torch's own method) costs the call."""
    from dataclasses import replace

    from autograder.sandbox import lanes
    from autograder.sandbox.policy import Limits, Timeouts
    from autograder.sandbox.process import StudentProcess

    rules = {"softmax": forbidden.SOFTMAX, "norm": forbidden.NORM, "attention": forbidden.ATTENTION,
             "block": forbidden.BLOCK, "causal": forbidden.CAUSAL}
    every = set().union(*(rule.labels for rule in rules.values())) - {str(forbidden.TAMPERED)}
    shared = lanes.shared()
    if not shared.alive:
        shared.start()
    timeouts = replace(Timeouts.from_course(), cell=120, notebook=240)
    with StudentProcess([ROUTES_CELL], shared, Limits.from_course(), timeouts) as student:
        cells = student.start().cells
        assert all(c["ok"] for c in cells), cells
        routes = student.calls.call("rules")["value"]
        unseen, wrong = [], []
        for name, rule in sorted(routes.items()):
            try:
                events = set(student.calls.call("route", name)["events"])
            except Exception as exc:  # noqa: BLE001 - a road that fails to run is reported with the others
                unseen.append(f"{name} ({rule}: {exc})")
                continue
            if not events & rules[rule].labels:
                unseen.append(f"{name} ({rule}: saw {sorted(events)})")
        for name in ("own softmax", "own log-sum-exp softmax", "own layer norm", "own causal mask",
                     "make_fx of own softmax"):
            events = set(student.calls.call("route", name)["events"]) & every
            if events:
                wrong.append(f"{name}: {sorted(events)}")
        # the watch on torch.fx reachable from the student's code: switching it off is seen and costs the call
        try:
            switched = set(student.calls.call("switch_off_the_fx_watch")["events"])
        except Exception as exc:  # noqa: BLE001 - no wrapper to take torch's method from: nothing switched off
            switched = {f"{type(exc).__name__}: {exc}"}
    assert len(routes) > 60, sorted(routes)
    for expected in ("torch.ops.aten._softmax.default", "torch._C._VariableFunctions.native_layer_norm",
                     "torch.nn.functional.scaled_dot_product_attention",
                     "torch.ops.aten._native_multi_head_attention.default",
                     "torch.Tensor.softmax", "make_fx(symbolic) of torch's norm decomposition",
                     "torch.distributions.Categorical(logits)", "CausalBias._materialize"):
        assert expected in routes, expected
    assert not unseen, f"roads to a watched routine the watch did not see: {unseen}"
    assert not wrong, f"honest roads seen as a library routine: {wrong}"
    assert str(forbidden.TAMPERED) in switched, switched
