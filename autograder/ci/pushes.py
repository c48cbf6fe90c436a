"""When each student's graded commit reached GitHub: the submission time of the CI's late penalty.

A commit's own dates are what the student's machine wrote (``GIT_COMMITTER_DATE`` sets them to anything), so they
are no submission time. GitHub's activity log of a repository (``GET /repos/{owner}/{repo}/activity``) records
when each push arrived and which commit it left the branch at (``after``): the latest push to the default branch
gives the commit to grade and when it was submitted. The workflow checks out exactly that commit, so the time and
the graded files belong together. Where the log has no push (a repository made from the template and never pushed
to), the branch's head commit is graded with its committer date, marked ``"time_source": "commit"``.

The token needs read access to the students' repositories (a fine-grained token's "Contents: read" comes with the
"Metadata: read" that the activity log needs). ``$GITHUB_API_URL`` (set by GitHub's runners) is the API's address.
"""
from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request

from autograder.ci.gather import Entry

API = "https://api.github.com"


class PushError(RuntimeError):
    """GitHub's API did not answer as expected (the message names the repository and the request)."""


def _get(api: str, token: str, path: str, query: dict | None = None):
    url = f"{api.rstrip('/')}{path}" + (f"?{urllib.parse.urlencode(query)}" if query else "")
    request = urllib.request.Request(url, headers={"Accept": "application/vnd.github+json",
                                                   "X-GitHub-Api-Version": "2022-11-28",
                                                   **({"Authorization": f"Bearer {token}"} if token else {})})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return json.loads(response.read().decode("utf-8"))
    except (urllib.error.URLError, ValueError, TimeoutError) as exc:
        raise PushError(f"GET {path}: {exc}") from None


def submission(entry: Entry, api: str = API, token: str = "") -> dict:
    """What the grading job of ``entry`` checks out and when it was submitted: ``repository``, ``student``,
    ``sha``, ``pushed_at`` (ISO 8601), ``time_source`` (``push`` or ``commit``), ``error`` (empty, or why none
    of it could be had: the job grades the default branch then, without a late penalty)."""
    quoted = "/".join(urllib.parse.quote(part, safe="") for part in entry.repository.split("/"))
    found = {"repository": entry.repository, "student": entry.student, "sha": "", "pushed_at": "",
             "time_source": "", "error": ""}
    try:
        branch = _get(api, token, f"/repos/{quoted}")["default_branch"]
        pushes = _get(api, token, f"/repos/{quoted}/activity",
                      {"ref": f"refs/heads/{branch}", "per_page": 1, "direction": "desc"})
        pushes = [p for p in pushes if p.get("after") and p.get("timestamp") and p["after"].strip("0")]
        if pushes:
            return {**found, "sha": pushes[0]["after"], "pushed_at": pushes[0]["timestamp"], "time_source": "push"}
        head = _get(api, token, f"/repos/{quoted}/commits/{urllib.parse.quote(branch, safe='')}")
        return {**found, "sha": head["sha"], "pushed_at": head["commit"]["committer"]["date"],
                "time_source": "commit"}
    except (PushError, KeyError, TypeError, IndexError) as exc:
        return {**found, "error": f"{type(exc).__name__}: {exc}"}


def matrix(entries: list[Entry], api: str | None = None, token: str | None = None) -> list[dict]:
    """``submission`` of every roster entry (the grading jobs' matrix)."""
    api = api or os.environ.get("GITHUB_API_URL") or API
    token = os.environ.get("GH_TOKEN", "") if token is None else token
    return [submission(entry, api, token) for entry in entries]
