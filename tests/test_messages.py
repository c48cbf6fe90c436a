"""The one catalogue of error reasons and notices (autograder/messages.py)."""
import re
import string

import pytest

from autograder.messages import Label, Notice, Reason, ValidateText, Verdict

MEMBERS = [*Reason, *Notice, *Label, *ValidateText, *Verdict]
HANGUL = re.compile(r"[가-힣]")


def test_no_code_is_an_alias_of_another():
    """Two members with the same texts would silently be one code (an Enum alias)."""
    assert len(Reason.__members__) == len(list(Reason)) and len(Notice.__members__) == len(list(Notice))


@pytest.mark.parametrize("code", MEMBERS, ids=lambda c: c.name)
def test_every_code_formats_with_its_fields_and_is_korean_for_the_student(code):
    fields = {name: 7 for _, name, _, _ in string.Formatter().parse(code._korean) if name}
    fields.update({name: 7 for _, name, _, _ in string.Formatter().parse(code._english) if name})
    text = code.korean(**fields)
    assert code(**fields).korean == text and code(**fields).english == code.english(**fields)
    assert "{" not in text and code.found_in(f"앞 {text} 뒤") and HANGUL.search(text)


def test_found_in_matches_whatever_the_fields():
    text = Reason.FORBIDDEN_ROUTINE.korean(name="softmax", routines="softmax, log_softmax")
    assert Reason.FORBIDDEN_ROUTINE.found_in(f"`softmax`: {text}")
    assert not Reason.FORBIDDEN_ROUTINE.found_in(Reason.NOT_IMPLEMENTED.korean())


def test_a_message_shows_english_to_instructors_and_korean_to_students():
    message = Reason.TOO_BIG(path="/s/a.ipynb", size=80, limit=50)
    assert str(message) == "/s/a.ipynb is 80 MB, over the limit of 50 MB"
    assert message.korean == "파일이 너무 큽니다 (80 MB, 한도 50 MB)"
    assert str(Reason.OTHER_ASSIGNMENT()) == Reason.OTHER_ASSIGNMENT.korean()   # no English: the Korean


def test_an_unreadable_file_is_explained_in_korean(tmp_path):
    from autograder.submission.files import NotGradable, read_submitted

    with pytest.raises(NotGradable) as refused:
        read_submitted(tmp_path / "gone.ipynb")
    assert str(refused.value) == f"cannot read {tmp_path / 'gone.ipynb'}: No such file or directory"
    assert refused.value.message.korean == "파일을 읽을 수 없습니다 (No such file or directory)"
