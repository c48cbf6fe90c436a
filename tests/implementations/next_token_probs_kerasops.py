# next_token_probs in keras.ops (the torch backend) in float64: ops.top_k for the k-th logit (ties with it kept),
# ops.softmax, a descending order from ops.argsort of the negated probabilities, ops.cumsum, and the kept mask put
# back in token order by sorting the order itself (the inverse permutation) instead of a scatter. Returns a Keras
# tensor. Only next_token_probs; the rest of the notebook is the solution's.
from keras import ops


def next_token_probs(logits, temperature=1.0, top_k=None, top_p=None):
    z = ops.convert_to_tensor(logits, dtype="float64")                                 # (B, V)
    v = z.shape[-1]
    if temperature == 0:
        return ops.one_hot(ops.argmax(z, axis=-1), v, dtype="float64")
    z = z / temperature
    if top_k is not None and top_k < v:
        kth = ops.top_k(z, top_k, sorted=True)[0][:, -1:]                             # (B, 1)
        z = ops.where(z < kth, float("-inf"), z)
    p = ops.softmax(z, axis=-1)                                                        # (B, V)
    if top_p is not None and top_p < 1:
        order = ops.argsort(-p, axis=-1)                                               # (B, V) most probable first
        ranked = ops.take_along_axis(p, order, axis=-1)
        keep_ranked = (ops.cumsum(ranked, axis=-1) - ranked) < top_p
        keep_ranked = ops.logical_or(keep_ranked, ops.arange(v)[None, :] == 0)         # at least one
        back = ops.argsort(order, axis=-1)                                             # (B, V) inverse permutation
        keep = ops.take_along_axis(keep_ranked, back, axis=-1)
        p = ops.where(keep, p, 0.0)
        p = p / ops.sum(p, axis=-1, keepdims=True)
    return p


