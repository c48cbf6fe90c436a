"""Stored reference outputs of torch's attention routines, per SDPA backend and dtype (see README.md).

``store.load_cases()`` is what the graders use; ``python -m autograder.graders.gpu_refs.generate`` rebuilds the
files under ``cases/``.
"""
