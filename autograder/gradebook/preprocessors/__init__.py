"""The course's nbgrader preprocessors, one job each, in the order ``course_config.py`` runs them.

``c.Autograde.sanitize_preprocessors``:

- ``RestoreCellMetadata``: put back the nbgrader metadata a student changed, before nbgrader's own checks.

``c.Autograde.autograde_preprocessors``:

- ``SandboxedExecute`` (instead of nbgrader's ``Execute``): run the submission's code cells in the sandbox, record
  their outputs, and hand the live process on;
- ``HiddenGraders``: grade that process with the hidden graders and hand the result on;
- ``WriteGradeCells`` (before nbgrader's ``SaveAutoGrades``): each exercise's Korean report and score in its grade
  cell;
- ``SaveGradeResult``: the full result as JSON for the instructor's report;
- ``RecordReview``: the result's review list in the autograded notebook's metadata, for formgrader's view.

What passes from one to the next through nbgrader's ``resources`` is stated and checked in ``handoff``.
"""
from autograder.gradebook.preprocessors.restore_cell_metadata import RestoreCellMetadata
from autograder.gradebook.preprocessors.sandboxed_execute import SandboxedExecute
from autograder.gradebook.preprocessors.hidden_graders import HiddenGraders
from autograder.gradebook.preprocessors.write_grade_cells import WriteGradeCells
from autograder.gradebook.preprocessors.save_grade_result import SaveGradeResult
from autograder.gradebook.preprocessors.record_review import RecordReview

__all__ = ["RestoreCellMetadata", "SandboxedExecute", "HiddenGraders", "WriteGradeCells", "SaveGradeResult",
           "RecordReview"]
