"""What makes the stored GPU reference outputs of ``autograder/graders/gpu_refs/cases/`` (run on a GPU machine):
``cases`` (each case's inputs and torch reference), ``generate`` (``python -m scripts.gpu_refs.generate``),
``run_on_gpu.sh`` (the prepared device script) and ``audit`` (how correct implementations and the catalogue's
mistakes fare against every stored output). The graders read the files with ``autograder.graders.gpu_refs.store``
and never import this package."""
