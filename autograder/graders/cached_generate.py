"""The cache of a cached ``generate``, judged from what the trusted side observed (the decoder's and the modern
assignment's ``test_generate.py``): the fed lengths, how many positions each question the proxies asked during the
call carried, in the order asked (``Call.questions``: this side's own record), and what the notebook's given
``KVCache``s hold when generate returns (``Call.caches``), against the float64 reference's keys and values of each
layer for the generated tokens. What differs between the assignments (the notebook's function names in the Korean
messages, the mistake ids, the model's KV heads) is their ``Words``."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from autograder.graders import tolerances


@dataclass(frozen=True)
class Words:
    """An assignment's part of the verdict's messages (Korean sentences) and mistake ids."""

    ignores_cache: str            # mistake id: nothing appended to the given caches
    refeeds: str                  # mistake id: more tokens than the prompt's in one step
    cache_per_step: str | None    # mistake id: a new cache per step (None: not catalogued)
    how_to_fill: str              # the end of "nothing appended": how the given caches are filled
    seen_through: str             # the end of "no step seen": which functions' inputs the grader reads
    shape_needed: str             # the end of "wrong shapes": the shape both must have
    what_keys_are: str            # the end of "no layer's keys": what a layer's keys and values are
    kv_heads: tuple[int, int] | None = None   # (heads, KV heads) of a GQA model: repeated heads are named


def fed_lengths(questions, d_model: int | None = None) -> list:
    """How many positions each question carried, in the order asked (``Call.questions``): the second-to-last axis of
    its first array argument. With ``d_model`` only questions about the hidden states ``(B, t, D)`` count (a GQA
    model's QK-norm asks about ``(B, t, H, dh)``); without it every array of three axes or more (the decoder's
    hidden states, heads ``(B, H, t, dh)`` and scores ``(B, H, t, T)``). A question about a smaller array (the final
    norm of the last position, next_token_probs' logits) carries none."""
    if d_model is None:
        return [shape[-2] for _, shape in questions if len(shape) >= 3]
    return [shape[-2] for _, shape in questions if len(shape) == 3 and shape[-1] == d_model]


def cache_verdict(fed, caches, reference, batch: int, prompt_len: int, new: int, words: Words):
    """``None`` when what this side observed of a cached generate of ``new`` tokens is what a cached generate
    makes; otherwise ``(Korean message, mistake id or None)``.

    ``fed``: the fed lengths (``fed_lengths``): the prefill feeds the prompt's ``prompt_len`` tokens and each later
    step one, so each is ``prompt_len`` or 1, and at least one question of every later step was seen (a generate
    that computes its steps out of the grader's sight cannot show it fed one token). ``caches``: what the watched
    caches held (``Call.caches``); ``reference``: each layer's float64 ``(keys, values)`` ``(B, H, T, dh)`` for the
    generated tokens. Each cache must hold, within ``tolerances.STUDENT``, a layer's keys and values for every
    position but the last (or every one: a generate may run its last token too), for all rows or a run of them (a
    generate that runs the rows one by one has a cache per layer and row), and every layer and row must have one."""
    layers, total = len(reference), prompt_len + new
    if caches is None:
        return "캐시가 담은 값을 읽을 수 없습니다 (숫자 배열이 아닌 기록).", None
    held = [(i, k, v) for i, (k, v) in enumerate(caches, start=1) if k is not None and k.size]
    if not held:
        return ("use_cache=True인데 주어진 `KVCache`에 아무것도 덧붙이지 않았습니다. 캐시를 쓰지 않고 단계마다 시퀀스 "
                "전체를 다시 계산했거나, 주어진 `KVCache`가 아닌 자기만의 캐시를 썼습니다. " + words.how_to_fill,
                words.ignores_cache)
    seen = f"채점기가 본 단계별 입력 토큰 수 {fed[:24]}{' …' if len(fed) > 24 else ''}"
    if any(t > prompt_len for t in fed):
        if len(held) > layers * batch:
            return (f"use_cache=True인데 캐시를 {len(held)}개 만들었습니다(층 {layers}개, 배치 {batch}행). 단계마다 새 "
                    "캐시를 만들면 과거 토큰의 K, V를 매번 다시 계산합니다. 캐시는 generate를 시작할 때 층마다 하나 "
                    f"만들어 끝까지 씁니다({seen}).", words.cache_per_step)
        return (f"use_cache=True인데 프롬프트({prompt_len}개)보다 많은 토큰을 한 단계에 넣었습니다({seen}): "
                "캐시에 이미 든 토큰을 다시 넣었습니다. 첫 단계(프리필)에 프롬프트를 한 번, 그다음부터는 단계마다 "
                "새 토큰 하나만 넣으세요.", words.refeeds)
    if any(t not in (1, prompt_len) for t in fed) or (fed and prompt_len not in fed):
        return (f"use_cache=True인데 프롬프트 {prompt_len}개를 한 번에 넣지 않고 나눠 넣었습니다({seen}). 첫 "
                "단계(프리필)에는 프롬프트 전체를 한 번에 넣습니다.", None)
    steps = fed.count(1) - (1 if prompt_len == 1 else 0)
    if not fed or steps < new - 1:
        return ("use_cache=True인데 채점기가 단계마다 블록에 넣은 토큰 수를 볼 수 없었습니다"
                f"({seen}, 새 토큰 {new}개). " + words.seen_through, None)
    covered = set()
    for index, keys, values in held:
        where = _layer_of(keys, values, reference, batch, total, words)
        if isinstance(where, str):
            return f"use_cache=True인데 {index}번째로 만든 캐시에 {where}", None
        covered |= where
    missing = sorted({(layer, row) for layer in range(layers) for row in range(batch)} - covered)
    if missing:
        layer, row = missing[0]
        return (f"use_cache=True인데 {layer + 1}번째 층(배치의 {row + 1}번째 행)의 키와 값을 담은 주어진 `KVCache`가 "
                "없습니다. 층마다 주어진 `KVCache`를 하나씩 두세요.", None)
    return None


def _layer_of(keys, values, reference, batch, total, words: Words):
    """The (layer, row) pairs whose reference keys and values ``keys``, ``values`` hold, or what is wrong with them
    (Korean, the end of a sentence)."""
    shape = tuple(np.shape(keys))
    if len(shape) != 4 or np.shape(values) != shape:
        return f"든 키와 값의 모양이 {shape}, {tuple(np.shape(values))}입니다: " + words.shape_needed
    rows, heads, length, _ = shape
    if words.kv_heads is not None:
        all_heads, kv_heads = words.kv_heads
        if heads == all_heads != kv_heads:
            return (f"헤드 {heads}개짜리 키와 값이 들어 있습니다(KV 헤드는 {kv_heads}개). 캐시에는 반복하기 전의 KV "
                    "헤드만 넣습니다: GQA가 캐시를 줄이는 방법이 이것입니다.")
    if length not in (total - 1, total):
        return (f"토큰 {length}개의 키와 값이 들어 있습니다: 프롬프트와 새 토큰을 합한 {total}개(마지막 토큰은 넣지 "
                f"않아도 되므로 {total - 1}개도 됨)여야 합니다. 캐시에 이미 든 토큰은 다시 넣지 않습니다.")
    close = dict(atol=tolerances.STUDENT.atol, rtol=tolerances.STUDENT.rtol)
    for layer, (ref_k, ref_v) in enumerate(reference):
        if shape[1:] != (ref_k.shape[1], length, ref_k.shape[3]) or rows > batch:
            continue
        for first in range(batch - rows + 1):
            span = slice(first, first + rows)
            if (np.allclose(keys, ref_k[span, :, :length], **close)
                    and np.allclose(values, ref_v[span, :, :length], **close)):
                return {(layer, row) for row in range(first, first + rows)}
    return f"든 키와 값이 어느 층의 키와 값과도 다릅니다(모양 {shape}). " + words.what_keys_are
