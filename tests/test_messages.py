"""The one catalogue of error reasons and notices (autograder/messages.py)."""
import re
import string

import pytest

from autograder.messages import Label, ListText, LtiText, Notice, Reason, ValidateText, Verdict

MEMBERS = [*Reason, *Notice, *Label, *ValidateText, *Verdict, *ListText, *LtiText]
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


@pytest.mark.parametrize("word, which, expected", [
    ("1.11e-03", "가", "1.11e-03이"), ("5.1e-04", "는", "5.1e-04는"), ("10", "로", "10으로"), ("7", "로", "7로"),
    ("`decoder_block`", "는", "`decoder_block`은"), ("`layer_norm`", "를", "`layer_norm`을"),
    ("`layer_norm`", "가", "`layer_norm`이"), ("`generate`", "은", "`generate`는"), ("`softmax`", "을", "`softmax`를"),
    ("`multi_head_attention`", "는", "`multi_head_attention`은"), ("`KVCache`", "이", "`KVCache`가"),
    ("GQA", "은", "GQA는"), ("어텐션", "가", "어텐션이"), ("배치", "이", "배치가"), ("길", "으로", "길로"),
])
def test_a_particle_after_a_name_or_number_reads_as_korean(word, which, expected):
    from autograder.messages import particle

    assert particle(word, which) == expected


def test_built_on_wrong_attaches_the_particles_the_names_take():
    text = Verdict.BUILT_ON_WRONG.korean(exercise="decoder_block", name="layer_norm")
    assert text.startswith("`decoder_block`은 직접 만든 `layer_norm`을 호출합니다. `layer_norm`이 틀려서"), text
    assert Verdict.BUILT_ON_WRONG.korean(exercise="generate", name="decoder_block").startswith(
        "`generate`는 직접 만든 `decoder_block`을 호출합니다. `decoder_block`이 틀려서")
