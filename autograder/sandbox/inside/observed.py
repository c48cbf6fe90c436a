"""Given classes watched during one graded call: the instances it made and what they hold when it returns.

The decoder's ``generate`` must keep the notebook's given ``KVCache`` in every layer (the contract), so the grader
asks to watch ``KVCache`` while it calls ``generate``: for the call, the name is bound to a subclass that remembers
each instance made through it (and each one given to ``append``), in that order. When the call has returned (within
its time limit), the keys and values each of them holds are read (``keys``, ``values``, as numbers) and go back in the
reply; the grader compares them with the reference model's keys and values of each layer
(``graders/decoder/test_generate.py``). Nothing here decides anything, and nothing here is believed: like every value
from this process, what a cache holds is the student's code's answer, judged on the trusted side.
"""
import builtins as _builtins_module

# This module's own copy of the builtins, taken before any student code runs: a cell that patches ``builtins.any``,
# ``abs``, ``__import__``... changes the student's code, not the guard, the proxies or the wire format (a function
# looks its builtins up in its module's ``__builtins__``).
__builtins__ = dict(vars(_builtins_module))

from .values import to_numpy  # noqa: E402

MAX_INSTANCES = 64          # instances reported for one call, at most (more are counted in ``dropped``)
MAX_ELEMENTS = 1 << 20      # numbers sent back for all of them together, at most (an array past it is absent)


class Observed:
    """For one graded call, each class the grader names (``observe``) that the notebook defines is replaced in its
    namespace by a subclass that remembers its instances; the original is put back afterwards."""

    def __init__(self, namespace, names):
        self.namespace = namespace
        self.originals = {name: namespace[name] for name in names if isinstance(namespace.get(name), type)}
        self.stand_ins = {}
        self.instances = []   # in the order they were made (or first appended to), kept alive for the report
        self.ids = set()      # id() of every instance remembered (and of those past ``MAX_INSTANCES``)
        self.dropped = 0

    def __enter__(self):
        for name, cls in self.originals.items():
            try:
                watched = self._watching(cls)
            except Exception:  # noqa: BLE001 - a class that cannot be subclassed is not watched (nothing recorded)
                continue
            self.stand_ins[name] = self.namespace[name] = watched
        return self

    def __exit__(self, *exc):
        for name, original in self.originals.items():
            if name in self.stand_ins and self.namespace.get(name) is self.stand_ins[name]:
                self.namespace[name] = original

    def report(self):
        """What each instance holds now: ``{"caches": [{"keys": array or None, "values": ...}, ...], "dropped": n}``
        (numpy arrays: ``serve`` encodes it into the reply). Reading ``keys`` and ``values`` runs the class's code (the
        student's process calls it within the call's time limit); a value that is not a numeric array (or is past
        ``MAX_ELEMENTS``) is None."""
        caches, budget = [], [MAX_ELEMENTS]
        for instance in self.instances:
            caches.append({"keys": self._array(instance, "keys", budget),
                           "values": self._array(instance, "values", budget)})
        return {"caches": caches, "dropped": self.dropped}

    @staticmethod
    def _array(instance, attribute, budget):
        try:
            array = to_numpy(getattr(instance, attribute))
        except Exception:  # noqa: BLE001 - a property that fails holds nothing the grader can read
            return None
        if array is None or array.dtype.kind not in "biuf" or array.size > budget[0]:
            return None
        budget[0] -= array.size
        return array

    def _remember(self, instance):
        key = id(instance)
        if key in self.ids:
            return
        self.ids.add(key)   # (an id is not reused while the call runs: ``instances`` keeps each one alive)
        if len(self.instances) >= MAX_INSTANCES:
            self.dropped += 1
            return
        self.instances.append(instance)

    def _watching(self, cls):
        remember = self._remember

        class Watched(cls):
            def __init__(self, *args, **kwargs):
                remember(self)
                super().__init__(*args, **kwargs)

            def append(self, *args, **kwargs):
                remember(self)
                return super().append(*args, **kwargs)

        for attribute in ("__name__", "__qualname__", "__module__", "__doc__"):
            try:
                setattr(Watched, attribute, getattr(cls, attribute))
            except (AttributeError, TypeError):
                pass
        return Watched
