# Grading image (UNTESTED here): the course repository with its .venv (autograder included) and bubblewrap.
FROM python:3.11-slim-bookworm
RUN apt-get update && apt-get install -y --no-install-recommends bubblewrap fonts-nanum git \
 && rm -rf /var/lib/apt/lists/* && useradd --uid 1100 --create-home grader
USER grader
WORKDIR /home/grader/attention-ko
COPY --chown=grader . .
RUN python -m venv .venv && .venv/bin/pip install --no-cache-dir -r requirements.txt \
 && .venv/bin/pip install --no-cache-dir --no-deps -r requirements-nodeps.txt \
 && .venv/bin/pip install --no-cache-dir --no-deps -e . && bash scripts/install_kernel.sh --kernel-only
