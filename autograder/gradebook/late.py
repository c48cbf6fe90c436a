"""Late penalties, applied by nbgrader's ``AssignLatePenalties`` (configured in ``course_config.py``)."""
from __future__ import annotations

import math

from nbgrader.plugins import LateSubmissionPlugin
from traitlets import Float


class PercentPerDay(LateSubmissionPlugin):
    """Deduct a percentage of the score for every started day past the due date, after a grace period."""

    percent_per_day = Float(10.0, help="Percent of the score deducted per started day late.").tag(config=True)
    grace_minutes = Float(0.0, help="Minutes after the due date that still count as on time.").tag(config=True)
    max_percent = Float(100.0, help="The most that late penalties may take, in percent.").tag(config=True)

    def late_submission_penalty(self, student_id, score, total_seconds_late):
        late = total_seconds_late - self.grace_minutes * 60
        if late <= 0 or not score:
            return 0.0
        days = math.ceil(late / 86400)
        percent = min(self.max_percent, self.percent_per_day * days)
        penalty = round(score * percent / 100, 2)
        self.log.info("Late penalty for %s: %d day(s) late, -%g%% = -%g points", student_id, days, percent, penalty)
        return penalty
