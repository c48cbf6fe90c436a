"""The course's settings changed for one test, where the package reads them (``settings.load()``)."""
from __future__ import annotations

import dataclasses

from autograder import settings


def change_setting(monkeypatch, section: str | None = None, **values):
    """``settings.load()`` returns a copy with ``values`` (of ``section``'s record, or of the ``Course`` itself) until
    the test ends (``monkeypatch``); returns the copy. Changes made one after another add up."""
    course = settings.load()
    if section is not None:
        values = {section: dataclasses.replace(getattr(course, section), **values)}
    changed = dataclasses.replace(course, **values)
    monkeypatch.setattr(settings, "load", lambda: changed)
    return changed
