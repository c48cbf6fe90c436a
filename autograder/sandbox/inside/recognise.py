"""A library routine known by what its code is, not by which object it is or what it is called.

``recogniser`` makes the forbidden-routine watch's ``known(code)`` (``monitor.guard``): the report of the watched
routine that a code object is, or is a copy of, or None. Like the rest of the watch, the functions it makes read every
name they use from their own closure, none from this module's globals or builtins (the student's code can reach
those: tests/sandbox/live/test_policy.py checks it).
"""
import builtins as _builtins_module

# This module's own copy of the builtins, taken before any student code runs: a cell that patches ``builtins.any``,
# ``abs``, ``__import__``... changes the student's code, not the guard, the proxies or the wire format (a function
# looks its builtins up in its module's ``__builtins__``).
__builtins__ = dict(vars(_builtins_module))

import sys  # noqa: E402
import types

CACHED = 4096   # code objects the kernels remember the content of (by identity), at most


def recogniser(routines):
    """``(known, teach, codes)``: ``known(code)`` gives the report (bytes, one line or more for the event pipe) of the
    routine of ``routines`` (``{code object: label}``, ``watched.routine_codes()``) that ``code`` is a copy of, or
    None; ``teach(code, report)`` adds a code object made at run time (the code torch.fx generated from a trace of
    a watched routine) with its report, so that it and every copy of it are known from then on; ``codes`` are the
    code objects of the functions that run when ``known`` or ``teach`` is called (the guard keeps every frame of
    them out of the student's reach)."""
    import dis
    import weakref

    # A routine is known by what it is, not by which object it is: ``content`` is what a code object computes,
    # apart from where and how it was written. On Python 3.11 (the course's) it is its instructions as they run:
    # no NOP or EXTENDED_ARG, constants by value (nested code objects by their own content), names by name, local
    # and cell variables by number, jumps by the instruction they land on, with its argument counts and kind of
    # function; so line numbers and layout (NOPs), the docstring, comments, local names, the function's name,
    # qualified name and file do not matter. A clone (``code.replace``, ``FunctionType``), a copy under another
    # name, and its source compiled again (pasted, reformatted, without its docstring) have the content of the
    # original. Elsewhere the bytecode, constants and names as they are (clones and verbatim copies only). None for a
    # constant of a kind no library routine has (nothing of the student's is called to compare it). The kernels
    # remember each code object they met by identity (a weak reference: an id is reused only once its object is
    # gone), at most ``_CACHED`` of them.
    kind, hexf, length, ident, ref, tuple_, sorted_, repr_ = type, float.hex, len, id, weakref.ref, tuple, sorted, repr
    code_type, float_type, complex_type, frozenset_type = types.CodeType, float, complex, frozenset
    plain = frozenset({int, bool, str, bytes, type(None), type(...)})
    Unusual, cached = (RecursionError, TypeError, ValueError, IndexError, KeyError, MemoryError), CACHED
    by_instructions = sys.version_info[:2] == (3, 11)
    cache_entries = tuple(dis._inline_cache_entries) if by_instructions else ()
    has_const, has_name, has_jump = frozenset(dis.hasconst), frozenset(dis.hasname), frozenset(dis.hasjrel)
    backward = frozenset(op for op, name in enumerate(dis.opname) if "JUMP_BACKWARD" in name)
    skipped = frozenset({dis.opmap["NOP"], dis.opmap["EXTENDED_ARG"], dis.opmap.get("CACHE", 0)})
    extended, load_global, function_kind = dis.opmap["EXTENDED_ARG"], dis.opmap["LOAD_GLOBAL"], 0x3AC

    def content(code, depth):
        if depth > 16:
            return None
        if not by_instructions:
            consts = []
            for const in code.co_consts:
                kept = constant(const, depth)
                if kept is None:
                    return None
                consts.append(kept)
            return (code.co_code, tuple_(consts), code.co_names, code.co_argcount, code.co_posonlyargcount,
                    code.co_kwonlyargcount)
        raw, names, consts = code.co_code, code.co_names, code.co_consts
        decoded, offset, ext, end = [], 0, 0, length(raw)
        while offset < end:
            op = raw[offset]
            arg = raw[offset + 1] | ext
            ext = (arg << 8) if op == extended else 0
            decoded.append((offset, op, arg))
            offset += 2 + 2 * cache_entries[op]
        position, at = 0, {}
        for offset, op, _ in decoded:      # a jump to a skipped instruction lands on the next one kept
            at[offset] = position
            if op not in skipped:
                position += 1
        out = []
        for offset, op, arg in decoded:
            if op in skipped:
                continue
            if op in has_const:
                kept = constant(consts[arg], depth)
                if kept is None:
                    return None
                out.append((op, kept))
            elif op == load_global:
                out.append((op, names[arg >> 1], arg & 1))
            elif op in has_name:
                out.append((op, names[arg]))
            elif op in has_jump:
                out.append((op, at.get(offset + 2 + (-2 * arg if op in backward else 2 * arg), -1)))
            else:
                out.append((op, arg))
        return (tuple_(out), code.co_argcount, code.co_posonlyargcount, code.co_kwonlyargcount,
                code.co_flags & function_kind)

    def constant(const, depth):
        k = kind(const)
        if k is code_type:
            nested = content(const, depth + 1)
            return None if nested is None else ("code", nested)
        if k is float_type:
            return ("float", hexf(const))
        if k is complex_type:
            return ("complex", hexf(const.real), hexf(const.imag))
        if k is tuple_ or k is frozenset_type:
            items = []
            for c in const:
                item = constant(c, depth + 1)
                if item is None:
                    return None
                items.append(item)
            return (k.__name__, tuple_(sorted_(items, key=repr_) if k is frozenset_type else items))
        if k in plain:
            return (k.__name__, const)
        return None

    watched = {}
    for code, label in routines.items():
        found = content(code, 0)
        if found is not None:
            watched[found] = (label + "\n").encode()
    seen = {}

    def known(code):
        """The report of the watched routine ``code`` is (a copy of), or None."""
        entry = seen.get(ident(code))
        if entry is not None and entry[0]() is code:
            return entry[1]
        try:
            token = watched.get(content(code, 0))
            weak = ref(code)
        except Unusual:
            return None
        if length(seen) >= cached:
            for key in [k for k, (r, _) in seen.items() if r() is None]:
                del seen[key]
            if length(seen) >= cached:
                seen.clear()
        seen[ident(code)] = (weak, token)
        return token

    def teach(code, token):
        """Know ``code`` (and the code objects it holds: a generated module's functions) as ``token`` from now on."""
        pending = [code]
        while pending:
            each = pending.pop()
            try:
                found = content(each, 0)
                weak = ref(each)
            except Unusual:
                continue
            if found is not None:
                watched[found] = token
            seen[ident(each)] = (weak, token)
            pending += [const for const in each.co_consts if kind(const) is code_type]

    return known, teach, {known.__code__, teach.__code__, content.__code__, constant.__code__}
