"""Stored reference outputs of torch's attention routines, per SDPA backend and dtype (see README.md).

``store.load_cases()`` is what the graders use. What makes the files under ``cases/`` (the cases' inputs and torch
references, the generator, the audit of the tolerance policy) is in ``scripts/gpu_refs/``, outside the package: it
runs on a GPU machine and grading never imports it.
"""
