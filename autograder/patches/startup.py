"""What every Python of the course's environment runs when it starts: ``rfc3987_syntax`` imported at its first use.

jsonschema (under nbformat, nbgrader and jupyter_server's event schemas) imports ``rfc3987_syntax`` when it is
itself imported, for the ``iri`` and ``iri-reference`` string formats only, and that import builds Lark's Earley
parsers of RFC 3987's grammar: 1.7-2.2 s of every nbgrader command (3.9 s -> 1.7 s for ``generate_assignment``) and
of every JupyterLab server's start (``import jupyter_server.serverapp`` 2.25 s -> 0.53 s) on the course's 2-core
machines. No schema of nbformat, nbgrader or Jupyter asks for those formats. Here ``rfc3987_syntax`` is a stand-in
until something uses it: its ``is_valid_syntax`` (the one name jsonschema imports) imports the real module at its
first call, and any other attribute does the same, so a schema that does ask for an IRI is checked exactly as before.

``scripts/setup.sh`` installs this file into the course's ``.venv`` as ``_attention_course_startup.py``, with
``_attention_course_startup.pth`` (site's start-up hook) calling ``install()``: every interpreter of the environment
runs it: nbgrader's commands, JupyterLab servers, kernels, the sandbox's processes; the hub's environment gets both
files at every start of the hub (``hub.environment.lab_additions``). It therefore imports nothing of the autograder
package.
``python -m autograder`` calls ``install()`` itself where the ``.pth`` is not installed.

Example:
    >>> install()
    >>> import jsonschema                                  # no grammar built
    >>> jsonschema.Draft7Validator.FORMAT_CHECKER.conforms("https://例.kr/", "iri")   # built now
    True
"""
import importlib
import importlib.util
import sys
import types

NAME = "rfc3987_syntax"
INSTALLED_AS = "_attention_course_startup"
PTH = f"import {INSTALLED_AS}; {INSTALLED_AS}.install()\n"   # site runs a .pth file's lines that begin with import


class _StandIn(types.ModuleType):
    """``rfc3987_syntax`` until it is used: any attribute it lacks is the real module's.

    It has the real package's ``__path__`` and ``__file__`` (``install``): the import system asks for ``__path__``
    at every ``from rfc3987_syntax import ...``, and a submodule is imported from there; other double-underscore
    names (what tools look for on every module in ``sys.modules``) are missing, as on a module that lacks them."""

    def __getattr__(self, attr):
        if attr.startswith("__") and attr.endswith("__"):
            raise AttributeError(attr)
        return getattr(_real(), attr)


def _real() -> types.ModuleType:
    """The real ``rfc3987_syntax``, imported (and put in ``sys.modules`` in the stand-in's place) at the first need."""
    module = sys.modules.get(NAME)
    if isinstance(module, _StandIn):
        del sys.modules[NAME]
        try:
            module = importlib.import_module(NAME)
        except BaseException:
            sys.modules[NAME] = _STAND_IN   # a failed import (a signal, say) leaves the stand-in for the next call
            raise
    return module


def is_valid_syntax(term: str, value: str) -> bool:
    return _real().is_valid_syntax(term, value)


_STAND_IN = _StandIn(NAME, "a stand-in until first use (autograder/patches/startup.py)")
_STAND_IN.is_valid_syntax = is_valid_syntax


def install() -> None:
    """Put the stand-in in ``sys.modules`` unless ``rfc3987_syntax`` is imported already or not installed."""
    if NAME in sys.modules:
        return
    spec = importlib.util.find_spec(NAME)
    if spec is None or spec.submodule_search_locations is None:
        return
    _STAND_IN.__path__, _STAND_IN.__file__ = list(spec.submodule_search_locations), spec.origin
    sys.modules[NAME] = _STAND_IN


def write_into(site_packages) -> list:
    """Install this file and its ``.pth`` into ``site_packages`` (a folder); returns the paths written."""
    import pathlib
    import py_compile

    folder = pathlib.Path(site_packages)
    module = folder / f"{INSTALLED_AS}.py"
    module.write_text(pathlib.Path(__file__).read_text(encoding="utf-8"), encoding="utf-8")
    py_compile.compile(str(module), doraise=True)   # none is written at start where PYTHONDONTWRITEBYTECODE is set
    pth = folder / f"{INSTALLED_AS}.pth"
    pth.write_text(PTH, encoding="utf-8")
    return [module, pth]


if __name__ == "__main__":   # scripts/setup.sh: python -m autograder.patches.startup
    import sysconfig

    for path in write_into(sysconfig.get_paths()["purelib"]):
        print(f"setup: {path}")
