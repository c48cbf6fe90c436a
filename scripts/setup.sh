#!/usr/bin/env bash
# Set up everything the course package needs on a fresh machine (idempotent).
# Creates .venv with the pinned dependencies and installs the autograder package into it.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
UV_VERSION=0.9.5   # the installer (scripts/setup.sh only; nothing imports it)

# System packages: bubblewrap (the sandbox), a Korean font for the heatmaps, PostgreSQL (gradebook tests),
# Chromium and its driver (browser tests), Node.js with npm (JupyterHub's proxy), iptables (the hub's firewall between
# users) and nss-myhostname (*.localhost resolves to this machine: the tests' hub gives each user a name below
# hub.localhost). Installed when missing and when we may (root).
DEBS="bubblewrap fonts-nanum fonts-noto-color-emoji postgresql chromium chromium-driver iptables libnss-myhostname"
missing=$(for p in $DEBS; do dpkg -s "$p" >/dev/null 2>&1 || echo "$p"; done)
command -v npm >/dev/null 2>&1 || missing="$missing nodejs npm"
if [ -n "$missing" ]; then
  if [ "$(id -u)" = 0 ]; then
    echo "setup: apt-get install $missing"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
    rm -f "${HOME:-/root}"/.cache/matplotlib/fontlist-*.json   # matplotlib must see the new Korean font
  else
    echo "setup: please install (as root): apt-get install $missing" >&2
  fi
fi
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
stamp=.venv/.requirements.sha256
want=$(cat requirements.txt requirements-browser.txt requirements-nodeps.txt pyproject.toml scripts/setup.sh \
  autograder/patches/startup.py | sha256sum \
  | cut -d' ' -f1)
if [ ! -f "$stamp" ] || [ "$(cat "$stamp")" != "$want" ]; then
  # uv installs the same pinned packages as pip (same resolution, checked with `pip freeze`) in seconds instead of
  # minutes: downloads in parallel, unpacks once into its cache (~/.cache/uv) and hard-links from there. It reads
  # none of pip's configuration, so pip's index, find-links (the local torch CPU wheel) and constraints are handed
  # over. Unlike pip, uv writes no bytecode unless told (--compile-bytecode): where PYTHONDONTWRITEBYTECODE is set (as
  # on the course's machines) every interpreter would compile each module it imports again, every time (a bare
  # `import keras` 7 s instead of 3 s; every nbgrader command, kernel and grading process pays the same). Where uv
  # cannot be had, pip does the same work.
  install=(.venv/bin/pip install -q)
  if .venv/bin/pip install -q "uv==$UV_VERSION" 2>/dev/null; then
    install=(.venv/bin/uv pip install -q --python .venv/bin/python --index-strategy unsafe-best-match
             --compile-bytecode)
    while read -r key value; do
      case "$key" in
        *.index-url) install+=(--index-url "$value") ;;
        *.extra-index-url) for url in $value; do install+=(--extra-index-url "$url"); done ;;
        *.find-links) for dir in $value; do install+=(--find-links "$dir"); done ;;
        *.constraint) for file in $value; do install+=(--constraint "$file"); done ;;
      esac
    done < <(.venv/bin/pip config list 2>/dev/null | sed -E "s/=/ /; s/'//g")
  fi
  "${install[@]}" -r requirements.txt -r requirements-browser.txt
  "${install[@]}" --no-deps -r requirements-nodeps.txt
  "${install[@]}" --no-deps -e .
  # rfc3987_syntax (under jsonschema) imported at its first use, not at every nbgrader command's and JupyterLab's
  # start (~2 s each): autograder/patches/startup.py, run by every interpreter of .venv through a .pth file
  .venv/bin/python -m autograder.patches.startup >/dev/null
  bash scripts/install_kernel.sh >/dev/null   # the course kernel (KERAS_BACKEND=torch) and nbgrader's extensions
  echo "$want" > "$stamp"
fi
# The course's own modules as bytecode too: the editable install leaves them as sources, which every interpreter
# compiles again on import where PYTHONDONTWRITEBYTECODE is set (each grading process, nbgrader command and test
# process: ~0.1 s of autograder's modules, 0.04 s of the graders' tests). compileall skips what is current (0.06 s);
# a file changed since is compiled again by the interpreter that imports it (the timestamp check), never run stale.
.venv/bin/python -m compileall -q autograder
# From npm into build/node, pinned: configurable-http-proxy, JupyterHub's proxy (`python -m autograder hub`), and
# KaTeX, the math of the feedback pages (inlined into them: no CDN; its dist files copied to build/katex).
CHP_VERSION=4.6.3
KATEX_VERSION=0.16.22
NODE_PACKAGES="configurable-http-proxy@$CHP_VERSION katex@$KATEX_VERSION"
if command -v npm >/dev/null 2>&1 && [ "$(cat build/node/.version 2>/dev/null)" != "$NODE_PACKAGES" ]; then
  mkdir -p build/node
  npm install --silent --no-audit --no-fund --prefix build/node $NODE_PACKAGES >/dev/null
  rm -rf build/katex && mkdir -p build/katex/contrib build/katex/fonts
  cp build/node/node_modules/katex/dist/katex.min.js build/node/node_modules/katex/dist/katex.min.css build/katex/
  cp build/node/node_modules/katex/dist/contrib/auto-render.min.js build/katex/contrib/
  cp build/node/node_modules/katex/dist/fonts/*.woff2 build/katex/fonts/
  echo "$NODE_PACKAGES" > build/node/.version
fi
echo "setup: $(.venv/bin/python -c 'from importlib.metadata import version as v; print(", ".join(f"{p} {v(p)}" for p in ("torch", "keras", "nbgrader")))')"
