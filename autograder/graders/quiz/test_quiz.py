"""The quiz: one auto-graded question per variable q1, q2, ... (the key: answer_key.py, never released).

Answer format (the notebook asks for exactly this, and its visible checks show the format before submission):

* multiple choice: one of the letters A-D as a string. The grader compares after stripping spaces and ignoring
  case, so "b" and " B " count as "B" (the letter is unambiguous). Anything else is not a letter and gets a Korean
  message explaining the format: a word or a sentence ("B번", "(B)", "B. 분산이..."), a number (2), a list
  (["B"]), None.
* numbers: an int or a float (numpy numbers too, i.e. an array of a single element), right when
  |answer - key| <= the question's tolerance (atol). A string is not accepted even when it spells a number
  ("576"): the question asks for a number without quotes, the visible check rejects a string before submission,
  and accepting one would make "576 MiB" or "약 576" a judgement call. bool, NaN and inf are not numbers here.

A wrong answer's message gives the question's explanation (shown only in the feedback after grading).
"""
import math

import numpy as np
import pytest

from autograder.graders import registry
from autograder.graders.compare import GradingFailure
from autograder.graders.questions import CHOICES, Question
from autograder.sandbox.remote import Remote

# A tolerance for the float representation of the key's atol (0.757 + 0.001 is not exactly 0.758).
ROUNDING = 1e-9


def shown(value) -> str:
    if isinstance(value, Remote):                     # an object that stayed in the student's process
        return f"<{value.type_name} 객체>"
    text = repr(value.tolist()) if isinstance(value, np.ndarray) else repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def type_name(value) -> str:
    if value is None:
        return "값 없음:"
    if isinstance(value, Remote):
        return value.type_name
    if isinstance(value, np.ndarray):
        return f"배열 {value.shape}" if value.shape else f"numpy {value.dtype}"
    return type(value).__name__


def read_choice(name: str, value) -> str:
    if isinstance(value, str):
        letter = value.strip().upper()
        if letter in CHOICES:
            return letter
        raise GradingFailure(f"{name}: 보기 글자 A, B, C, D 가운데 하나만 문자열로 적어야 합니다 "
                             f"(지금은 {shown(value)}). 예: {name} = \"B\"")
    raise GradingFailure(f"{name}: 객관식 답은 보기 글자 하나를 따옴표로 감싼 문자열로 적어야 합니다 "
                         f"(지금은 {type_name(value)} {shown(value)}). 예: {name} = \"B\"")


def read_number(name: str, value) -> float:
    # A numpy number (np.float64(0.757)) arrives as an array of one element: shape () or, through the sandbox's
    # wire format today, (1,) (np.ascontiguousarray makes 0-d arrays 1-d). Both are one number.
    if isinstance(value, np.ndarray) and value.ndim <= 1 and value.size == 1 and value.dtype.kind in "iuf":
        value = value.item()
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        hint = " 따옴표를 지우세요." if isinstance(value, str) else ""
        raise GradingFailure(f"{name}: 답은 따옴표 없는 숫자(int 또는 float) 하나로 적어야 합니다.{hint} "
                             f"(지금은 {type_name(value)} {shown(value)}). 예: {name} = 12.5")
    if not math.isfinite(value):
        raise GradingFailure(f"{name}: 유한한 숫자를 적어야 합니다 (지금은 {shown(value)}).")
    return float(value)


def wrong(name: str, key: Question, given) -> GradingFailure:
    return GradingFailure(f"{name} ({key.topic_ko}): 오답입니다 (제출한 답 {shown(given)}). "
                          f"풀이: {key.explanation_ko}")


QUESTIONS = [pytest.param(key.name, marks=[pytest.mark.exercise(key.name), pytest.mark.points(key.points)],
                          id=key.name)
             for key in registry.questions_of("quiz")]


@pytest.mark.parametrize("name", QUESTIONS)
def test_answer(student, name):
    """퀴즈 답 (객관식: 보기 글자, 숫자: 허용 오차 안)"""
    key = registry.question(name)
    if name not in student.defined:
        raise GradingFailure(f"{name}: 답이 없습니다. 해답 셀의 raise NotImplementedError()를 지우고 "
                             f"{name} = ... 꼴로 답을 적은 뒤 그 셀을 실행하세요.")
    value = student.value(name)
    if key.kind == "choice":
        if read_choice(name, value) != key.answer:
            raise wrong(name, key, value)
    else:
        if abs(read_number(name, value) - key.answer) > key.atol + ROUNDING:
            raise wrong(name, key, value)
