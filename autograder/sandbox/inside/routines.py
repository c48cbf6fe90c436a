"""The library routines the forbidden-routine watch can report, each named once (``Routine``).

The monitor writes a routine's label (its value, ``"torch:softmax"``) on the event pipe; the trusted side reads the
lines back as plain strings, and the forbidden rules (``autograder/graders/forbidden.py``) and the library the
similarity report reads (``autograder/feedback/similarity/routines.py``) name the same members. A label that is not
a member cannot be written in a rule, so a rule can never name a routine the monitor does not report.

The tables of ``watched`` hold the labels as plain strings (``str(member)``): nothing the student's code can reach
while it runs is an enum member.
"""
from enum import StrEnum


class Routine(StrEnum):
    """A library routine as the monitor reports it: ``torch:`` a torch kernel or function, ``keras:`` a Keras layer
    or op, ``scipy:`` a scipy function, ``guard:`` a library changed under the watch.

    Example:

    >>> Routine.TORCH_SOFTMAX == "torch:softmax"
    True
    """

    TORCH_SOFTMAX = "torch:softmax"
    TORCH_LOG_SOFTMAX = "torch:log_softmax"
    TORCH_SDPA = "torch:scaled_dot_product_attention"
    TORCH_MULTI_HEAD_ATTENTION = "torch:multi_head_attention_forward"
    TORCH_LAYER_NORM = "torch:layer_norm"
    TORCH_GROUP_NORM = "torch:group_norm"
    TORCH_BATCH_NORM = "torch:batch_norm"
    TORCH_RMS_NORM = "torch:rms_norm"
    TORCH_CAUSAL_MASK = "torch:causal_mask"
    KERAS_ATTENTION = "keras:layers.Attention"
    KERAS_ADDITIVE_ATTENTION = "keras:layers.AdditiveAttention"
    KERAS_MULTI_HEAD_ATTENTION = "keras:layers.MultiHeadAttention"
    KERAS_GROUP_QUERY_ATTENTION = "keras:layers.GroupQueryAttention"
    KERAS_DOT_PRODUCT_ATTENTION = "keras:ops.dot_product_attention"
    KERAS_LAYER_NORMALIZATION = "keras:layers.LayerNormalization"
    KERAS_GROUP_NORMALIZATION = "keras:layers.GroupNormalization"
    KERAS_BATCH_NORMALIZATION = "keras:layers.BatchNormalization"
    KERAS_RMS_NORMALIZATION = "keras:layers.RMSNormalization"
    KERAS_NORMALIZATION = "keras:layers.Normalization"
    KERAS_NORMALIZATION_OPS = "keras:ops.normalization"
    # The two libraries' Qwen3 (the `modern` assignment's references): transformers' modeling_qwen3 and KerasHub's
    # models/qwen3, a norm, an MLP, an attention layer, and a decoder layer or the whole model.
    TRANSFORMERS_QWEN3_NORM = "transformers:Qwen3RMSNorm"
    TRANSFORMERS_QWEN3_MLP = "transformers:Qwen3MLP"
    TRANSFORMERS_QWEN3_ATTENTION = "transformers:Qwen3Attention"
    TRANSFORMERS_QWEN3_DECODER = "transformers:Qwen3DecoderLayer"
    KERAS_HUB_QWEN3_NORM = "keras_hub:Qwen3LayerNorm"
    KERAS_HUB_QWEN3_ATTENTION = "keras_hub:Qwen3Attention"
    KERAS_HUB_QWEN3_DECODER = "keras_hub:Qwen3TransformerDecoder"
    KERAS_CAUSAL_MASK = "keras:causal_mask"
    SCIPY_SOFTMAX = "scipy:special.softmax"
    SCIPY_LOG_SOFTMAX = "scipy:special.log_softmax"
    # A library module or kernel registration changed under the watch (``monitor.verifier``): the routines it hid
    # could be any of a rule's.
    LIBRARY_CHANGED = "guard:library_changed"
