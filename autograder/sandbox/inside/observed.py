"""Given classes watched during one graded call: what each of their instances was given to ``append``.

The decoder's ``generate`` must keep the notebook's given ``KVCache`` in every layer (the contract), so the grader
asks to watch ``KVCache`` while it calls ``generate``: for the call, the name is bound to a subclass whose ``append``
records the shape of its first argument (the keys, ``(B, H, t, d)``) and then does what the class does. The record
goes back in the reply as plain numbers, one list of shapes per cache in the order of their first ``append``; the
grader judges it (``graders/decoder/test_generate.py``). Nothing here decides anything: like every value from this
process, the record is the student's code's, and a record that does not fit the contract only loses points.
"""
import builtins as _builtins_module

# This module's own copy of the builtins, taken before any student code runs: a cell that patches ``builtins.any``,
# ``abs``, ``__import__``... changes the student's code, not the guard, the proxies or the wire format (a function
# looks its builtins up in its module's ``__builtins__``).
__builtins__ = dict(vars(_builtins_module))

MAX_APPENDS = 4096   # appends recorded in one call, at most (more are counted in ``dropped``, not kept)
MAX_DIMS = 8         # dimensions of a recorded shape, at most


class Observed:
    """For one graded call, each class the grader names (``observe``) that the notebook defines is replaced in its
    namespace by a subclass that records every ``append``; the original is put back afterwards."""

    def __init__(self, namespace, names):
        self.namespace = namespace
        self.originals = {name: namespace[name] for name in names if isinstance(namespace.get(name), type)}
        self.stand_ins = {}
        self.caches = []      # the instances appended to, in the order of their first append (kept alive: ids)
        self.shapes = []      # one list of shapes per instance
        self.index = {}       # id(instance) -> its position in ``caches``
        self.recorded = 0
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
        """The record as plain data: ``{"appends": [[shape, ...] per instance], "dropped": n}``."""
        return {"appends": [[list(shape) for shape in shapes] for shapes in self.shapes], "dropped": self.dropped}

    def _record(self, instance, keys):
        if self.recorded >= MAX_APPENDS:
            self.dropped += 1
            return
        self.recorded += 1
        try:
            shape = tuple(int(n) for n in tuple(keys.shape)[:MAX_DIMS])
        except Exception:  # noqa: BLE001 - keys without a shape are recorded as such (an empty shape)
            shape = ()
        key = id(instance)
        if key not in self.index:
            self.index[key] = len(self.caches)
            self.caches.append(instance)
            self.shapes.append([])
        self.shapes[self.index[key]].append(shape)

    def _watching(self, cls):
        record = self._record

        class Watched(cls):
            def append(self, *args, **kwargs):
                record(self, args[0] if args else next(iter(kwargs.values()), None))
                return super().append(*args, **kwargs)

        for attribute in ("__name__", "__qualname__", "__module__", "__doc__"):
            try:
                setattr(Watched, attribute, getattr(cls, attribute))
            except (AttributeError, TypeError):
                pass
        return Watched
