"""nbgrader's gradebook in the course's processes (``GRADEBOOK_HEAD`` in ``autograder.patches``): the schema version
a new gradebook is stamped with is read from nbgrader's migration scripts in the process, once per process, instead
of by an ``alembic heads`` command started for every new gradebook."""
from __future__ import annotations

import functools

from autograder.patches import GRADEBOOK_HEAD, install


def head_in_process() -> None:
    """Make ``nbgrader.api.get_alembic_version`` (what ``Gradebook`` stamps a new database with) read the head
    revision of nbgrader's migrations in this process (idempotent).

    Example:
        >>> head_in_process()
        >>> Gradebook("sqlite:///new.db")   # no `alembic` process started, none needed on $PATH
    """
    import nbgrader.api

    install(GRADEBOOK_HEAD, nbgrader.api, "get_alembic_version", _in_process)


def _in_process(original):
    def get_alembic_version() -> str:
        """The head revision of nbgrader's migration scripts, as the first line of ``alembic heads`` names it."""
        heads = head_revisions()
        return heads[0] if len(heads) == 1 else original()   # more than one head: as nbgrader reads them

    return get_alembic_version


@functools.lru_cache(maxsize=1)
def head_revisions() -> tuple:
    """The head revisions of nbgrader's migration scripts (alembic's ``ScriptDirectory``, which ``alembic heads``
    reads too); one for every released nbgrader."""
    from alembic.script import ScriptDirectory
    from nbgrader.dbutil import ALEMBIC_DIR

    return tuple(ScriptDirectory(ALEMBIC_DIR).get_heads())
