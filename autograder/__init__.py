"""The course's autograder (see README). Importing it first makes Keras's settings folder private where it would
not be (below)."""
import os as _os
import tempfile as _tempfile

# Keras reads (and writes) its settings in ~/.keras, and where the home folder is not writable (a system account
# whose home is /nonexistent, a read-only home in a container) in the fixed /tmp/.keras instead: a folder any local
# user can make first, with a keras.json that changes the references' epsilon or float type, or a link through which
# Keras writes its keras.json as the grading account. A private folder of this process's instead.
if "KERAS_HOME" not in _os.environ and not _os.access(_os.path.expanduser("~"), _os.W_OK):
    _os.environ["KERAS_HOME"] = _tempfile.mkdtemp(prefix="autograder-keras-")
