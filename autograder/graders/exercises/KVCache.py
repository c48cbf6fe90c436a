"""`KVCache` (kv_cache): its exercise record (at the end) and its known mistakes.

Its grader, ``graders/kv_cache/test_KVCache.py``, declares at its top the references, tolerances and
stored GPU cases it compares with.
"""
from autograder.graders.exercises import Exercise, Mistake, rewritten

# The correct KVCache; each mistake rewrites the line(s) marked ``# @NAME``.
_TEMPLATE = '''
class KVCache:
    def __init__(self):                                                    # @INIT
        self._keys = None                                                  # @EMPTY_KEYS
        self._values = None                                                # @EMPTY_VALUES

    def append(self, k, v):
        k, v = np.array(k), np.array(v)                                    # @COPY
        if self._keys is None:                                             # @IF_FIRST
            self._keys, self._values = k, v                                # @FIRST
        else:                                                              # @ELSE
            self._keys = np.concatenate([self._keys, k], axis=2)           # @CONCAT_KEYS
            self._values = np.concatenate([self._values, v], axis=2)       # @CONCAT_VALUES
        return self._keys, self._values                                    # @RETURN

    @property
    def keys(self):
        return self._keys                                                  # @KEYS

    @property
    def values(self):
        return self._values                                                # @VALUES

    def __len__(self):
        return 0 if self._keys is None else self._keys.shape[2]            # @LENGTH

    @property
    def nbytes(self):
        return 0 if self._keys is None else self._keys.nbytes + self._values.nbytes   # @NBYTES
'''


def _with(**lines: str) -> str:
    return rewritten(_TEMPLATE, **lines)


MISTAKES = [
    Mistake(
        id="kvcache_wrong_axis",
        exercise="KVCache",
        title="시간 축(axis 2)이 아니라 헤드 축(axis 1)으로 이어 붙임",
        hint="K, V는 (B, H, t, d)입니다. 토큰이 늘어나는 축은 axis=2 (또는 axis=-2)입니다.",
        source=_with(CONCAT_KEYS="self._keys = np.concatenate([self._keys, k], axis=1)",
                     CONCAT_VALUES="self._values = np.concatenate([self._values, v], axis=1)"),
    ),
    Mistake(
        id="kvcache_nbytes_keys_only",
        exercise="KVCache",
        title="nbytes에 키만 세고 값(V)을 빠뜨림",
        hint="캐시는 K와 V를 모두 들고 있습니다: self.keys.nbytes + self.values.nbytes.",
        source=_with(NBYTES="return 0 if self._keys is None else self._keys.nbytes"),
    ),
    Mistake(
        id="kvcache_class_level_storage",
        exercise="KVCache",
        title="저장소 리스트를 클래스 속성으로 만들어 모든 캐시가 토큰을 나눠 가짐",
        hint="class 본문의 `chunks = []`는 모든 인스턴스가 공유합니다. __init__에서 self.chunks = []로 만드세요.",
        source=_with(INIT="key_chunks = []\nvalue_chunks = []",
                     EMPTY_KEYS="",
                     EMPTY_VALUES="",
                     COPY="self.key_chunks.append(np.array(k))\nself.value_chunks.append(np.array(v))",
                     IF_FIRST="",
                     FIRST="",
                     ELSE="",
                     CONCAT_KEYS="",
                     CONCAT_VALUES="",
                     RETURN="return self.keys, self.values",
                     KEYS="return np.concatenate(self.key_chunks, axis=2) if self.key_chunks else None",
                     VALUES="return np.concatenate(self.value_chunks, axis=2) if self.value_chunks else None",
                     LENGTH="return sum(c.shape[2] for c in self.key_chunks)",
                     NBYTES="return sum(c.nbytes for c in self.key_chunks + self.value_chunks)"),
        diagnosable=False,   # its outputs depend on every cache made before (state shared across instances)
    ),
    Mistake(
        id="kvcache_returns_new_only",
        exercise="KVCache",
        title="append가 지금까지 쌓인 것이 아니라 새로 받은 k, v만 돌려줌",
        hint=("append(k, v)는 이어 붙인 뒤의 전체 (keys, values) (B, H, T, d)를 돌려줍니다: 새 토큰은 캐시 전체를 "
              "봐야 합니다."),
        source=_with(RETURN="return k, v"),
    ),
    Mistake(
        id="kvcache_len_counts_appends",
        exercise="KVCache",
        title="len(cache)가 토큰 수가 아니라 append를 부른 횟수",
        hint="len(cache)는 쌓인 토큰 수 T, 즉 keys.shape[2]입니다. 프리필 한 번에도 토큰이 여러 개 들어옵니다.",
        source=_with(EMPTY_VALUES="self._values = None\nself._appends = 0",
                     RETURN="self._appends += 1\nreturn self._keys, self._values",
                     LENGTH="return self._appends"),
    ),
]

EXERCISE = Exercise(
    "KVCache",
    assignment="kv_cache",
    points=2,
    # No library routine computes it, so nothing is forbidden (``forbidden.py``).
    forbidden=None,
    mistakes=MISTAKES,
)
