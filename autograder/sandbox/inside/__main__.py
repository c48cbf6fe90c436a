"""Start the inside of the sandbox: ``python -I FOLDER --nursery FD`` | ``--lane FD`` (``--contained``: in
bubblewrap). A submission's process is a child of a lane's fork server (``lane.py``), never started here.

``python -I`` puts FOLDER alone on ``sys.path``; the package is imported from the folder above it, which is taken off
``sys.path`` again (as with the one-file worker.py before, nothing of the sandbox's folder is importable), and the
package leaves ``sys.modules``, so the student's code finds none of its modules there.
"""
import os
import sys

_folder = sys.path.pop(0)
sys.path.insert(0, os.path.dirname(os.path.abspath(_folder)))
_bytecode, sys.dont_write_bytecode = sys.dont_write_bytecode, True   # no __pycache__ in the sandbox's folder
_package = __import__(os.path.basename(os.path.abspath(_folder)), fromlist=["lane", "nursery"])
sys.path.pop(0)
sys.dont_write_bytecode = _bytecode
for _name in [n for n in sys.modules if n == _package.__name__ or n.startswith(_package.__name__ + ".")]:
    del sys.modules[_name]

if sys.argv[1] == "--lane":
    _package.lane.serve_lane_alone(int(sys.argv[2]), contained="--contained" in sys.argv)
elif sys.argv[1] == "--nursery":
    _package.nursery.nursery(int(sys.argv[2]), contained="--contained" in sys.argv)
else:
    sys.exit(f"usage: python -I FOLDER --nursery FD | --lane FD [--contained], not {sys.argv[1:]}")
