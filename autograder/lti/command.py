"""``python -m autograder lti key FILE | urls HUB_URL | push ASSIGNMENT``: the course in the LMS (LTI 1.3).

* ``key FILE``: a new private key of the tool (mode 0600), and its public key to give the LMS where it takes one
  pasted instead of the hub's key set URL. Set ``COURSE["lti"]["tool_key"]`` to FILE.
* ``urls HUB_URL``: what to enter in the LMS when registering the tool (docs/instructors/lms.md).
* ``push ASSIGNMENT``: the gradebook's scores of the assignment into the LMS's gradebook (``push.py``).
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path


def add_parser(commands) -> None:
    """The ``lti`` subcommands in ``python -m autograder``'s parser."""
    lti = commands.add_parser("lti", help="the course in the LMS through LTI 1.3: the tool's key, the URLs to "
                              "register, grade passback (COURSE['lti'])")
    sub = lti.add_subparsers(dest="lti_command", required=True)
    key = sub.add_parser("key", help="make the tool's private key (then set COURSE['lti']['tool_key'] to it)")
    key.add_argument("file", help="where to write it (never replaced)")
    urls = sub.add_parser("urls", help="what to enter in the LMS when registering the tool")
    urls.add_argument("hub_url", help="the hub's address as students reach it, e.g. https://hub.example.ac.kr")
    push = sub.add_parser("push", help="send an assignment's scores (as in the grades CSV) to the LMS's gradebook")
    push.add_argument("assignment", help="the assignment whose scores to send (one of course_config.py's)")
    push.add_argument("--course-dir", default=".", help="the nbgrader course directory (default: .)")
    push.add_argument("--db-url", help="the gradebook (default: $COURSE_DB_URL, else the course's gradebook.db)")
    push.add_argument("--skip-unmatched", action="store_true", help="send the students found in the LMS even where "
                      "others are not (they are named, and the exit status is 1)")
    push.add_argument("--dry-run", action="store_true", help="check everything and list the scores, send nothing")


def urls(hub_url: str) -> dict[str, str]:
    """The tool's addresses as the LMS asks for them, for a hub at ``hub_url``."""
    hub = hub_url.rstrip("/") + "/hub"
    return {"OpenID Connect login initiation URL (Canvas: OpenID Connect Initiation Url; Moodle: Initiate login URL)":
            f"{hub}/lti13/oauth_login",
            "redirect URI (Canvas: Redirect URIs; Moodle: Redirection URI(s))": f"{hub}/lti13/oauth_callback",
            "target link URI (Canvas: Target Link URI; Moodle: Tool URL)": f"{hub}/",
            "public key set URL (Canvas: Public JWK URL; Moodle: Public keyset URL)": f"{hub}/lti13/jwks",
            "Canvas's JSON configuration (Developer Keys, LTI Key, Method: Enter URL)": f"{hub}/lti13/config"}


def main(args) -> int:
    from autograder import settings
    from autograder.lti import tool

    if args.lti_command == "key":
        try:
            key = tool.make_key(args.file)
        except FileExistsError:
            print(f"lti key: {args.file} exists; it is never replaced (the LMS knows the tool by it)", file=sys.stderr)
            return 2
        except OSError as exc:
            print(f"lti key: cannot write {args.file}: {exc.strerror}", file=sys.stderr)
            return 2
        print(f"lti key: {args.file} written (mode 0600). Set COURSE['lti']['tool_key'] = "
              f"{str(Path(args.file).resolve())!r}. Its public key (for an LMS that takes one pasted):")
        print(json.dumps(key.jwk, indent=2))
        return 0
    if args.lti_command == "urls":
        if not args.hub_url.startswith(("https://", "http://")):
            print(f"lti urls: {args.hub_url!r} is not a URL (https://...)", file=sys.stderr)
            return 2
        for label, url in urls(args.hub_url).items():
            print(f"{label}:\n    {url}")
        return 0
    from autograder.lti.push import push

    course = settings.load()
    if args.assignment not in course.assignments:
        print(f"lti push: unknown assignment {args.assignment!r}; the course's: {', '.join(course.assignments)}",
              file=sys.stderr)
        return 2
    course_dir = Path(args.course_dir).resolve()
    db_url = args.db_url or os.environ.get("COURSE_DB_URL") or f"sqlite:///{course_dir / 'gradebook.db'}"
    return push(args.assignment, course_dir, db_url, course.lti, skip_unmatched=args.skip_unmatched,
                dry_run=args.dry_run)
