# nbgrader reads this file; every setting lives in course_config.py.
#
# Fail closed: traitlets logs an error raised by a config file and lets nbgrader run on without that file
# (Application.raise_config_file_errors is off in nbgrader), and skips a missing sub-config without a word. Either
# way nbgrader would grade with its defaults: no sandbox, no hidden graders, no sanitiser of students' HTML. A
# SystemExit is no Exception: traitlets does not catch it, and the nbgrader command (or formgrader) stops with
# this message instead.
import os as _os
import traceback as _traceback

c = get_config()  # noqa: F821
_course_config = _os.path.join(_os.path.dirname(_os.path.abspath(__file__)), "course_config.py")
if not _os.path.isfile(_course_config):
    raise SystemExit(f"nbgrader_config.py: {_course_config} is missing; nbgrader stops rather than grade without "
                     "the course's settings (sandbox, graders, sanitiser)")
try:
    load_subconfig("course_config.py", path=_os.path.dirname(_course_config))  # noqa: F821
except Exception as _error:
    raise SystemExit(f"nbgrader_config.py: {_course_config} could not be loaded; nbgrader stops rather than grade "
                     "without the course's settings (sandbox, graders, sanitiser):\n"
                     + "".join(_traceback.format_exception_only(type(_error), _error))) from _error
