#!/usr/bin/env bash
# Install the course's Jupyter kernel into .venv and check that nbgrader's JupyterLab extensions are enabled.
# Idempotent; run after scripts/setup.sh (it needs .venv with ipykernel, jupyterlab and nbgrader).
#
#   bash scripts/install_kernel.sh                  # kernelspec into .venv/share/jupyter/kernels + extension checks
#   bash scripts/install_kernel.sh --prefix DIR     # kernelspec into DIR/share/jupyter/kernels (tests use this)
#   bash scripts/install_kernel.sh --kernel-only    # skip the extension checks
#
# The kernel "attention-course" (display name "Python 3 (어텐션 과목)") runs .venv's python with
# KERAS_BACKEND=torch, so `import keras` picks the torch backend even in a notebook that does not set it.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON_VENV:-.venv/bin/python}
JUPYTER="$PY -m jupyter"
NAME=attention-course
DISPLAY_NAME="Python 3 (어텐션 과목)"

prefix=""
check_extensions=1
while [ $# -gt 0 ]; do
  case "$1" in
    --prefix) prefix=$2; shift 2 ;;
    --kernel-only) check_extensions=0; shift ;;
    *) echo "install_kernel: unknown argument $1" >&2; exit 2 ;;
  esac
done
if [ -z "$prefix" ]; then
  prefix=$("$PY" -c 'import sys; print(sys.prefix)')
fi

# 1. The kernelspec: ipykernel writes kernel.json (argv = this venv's python -m ipykernel_launcher) and --env adds
#    KERAS_BACKEND to its "env"; the check below fails loudly if kernel.json does not say so.
# (ipykernel warns when DIR is not on Jupyter's search path: the tests add it to JUPYTER_PATH themselves.)
"$PY" -m ipykernel install --prefix "$prefix" --name "$NAME" --display-name "$DISPLAY_NAME" \
  --env KERAS_BACKEND torch 2>&1 >/dev/null | { grep -v "The kernelspec may not be found" || true; } >&2
"$PY" - "$prefix/share/jupyter/kernels/$NAME/kernel.json" <<'PYEOF'
import json, os, sys
path = sys.argv[1]
spec = json.load(open(path, encoding="utf-8"))
if spec.get("env", {}).get("KERAS_BACKEND") != "torch":          # older ipykernel without --env: add it here
    spec.setdefault("env", {})["KERAS_BACKEND"] = "torch"
    with open(path, "w", encoding="utf-8") as f:
        json.dump(spec, f, indent=1, ensure_ascii=False)
python = spec["argv"][0]
assert os.path.samefile(python, sys.executable), f"kernel.json runs {python}, not {sys.executable}"
print(f"install_kernel: {spec['display_name']} ({os.path.dirname(path)}): {python}, KERAS_BACKEND=torch")
PYEOF

[ "$check_extensions" = 1 ] || exit 0

# 2. nbgrader's server extensions (formgrader, assignment list, course list, validate) and its lab extension
#    (formgrader, assignment-list, course-list, create-assignment, validate-assignment; nbgrader 0.9's names).
#    pip enables them all; enable any that an admin or an earlier setup disabled, then check again.
server_exts="formgrader assignment_list course_list validate_assignment"
lab_plugins="formgrader assignment-list course-list create-assignment validate-assignment"
strip() { sed 's/\x1b\[[0-9;]*m//g'; }

disabled() { sed -n '/^Disabled extensions:/,/^$/p' <<<"$1"; }   # plugins listed there are off
server_list=$($JUPYTER server extension list 2>&1 | strip)
lab_list=$($JUPYTER labextension list 2>&1 | strip)
changed=0
for ext in $server_exts; do
  if ! grep -qE "nbgrader\.server_extensions\.$ext +enabled" <<<"$server_list"; then
    $JUPYTER server extension enable --sys-prefix "nbgrader.server_extensions.$ext" >/dev/null 2>&1; changed=1
  fi
done
if ! grep -qE "@jupyter/nbgrader v[0-9.]+ +enabled +OK" <<<"$lab_list"; then
  $JUPYTER labextension enable --level=sys_prefix @jupyter/nbgrader >/dev/null 2>&1; changed=1
fi
for plugin in $lab_plugins; do
  if disabled "$lab_list" | grep -q "@jupyter/nbgrader:$plugin"; then
    $JUPYTER labextension enable --level=sys_prefix "@jupyter/nbgrader:$plugin" >/dev/null 2>&1; changed=1
  fi
done
if [ "$changed" = 1 ]; then                                      # check what the enabling did
  server_list=$($JUPYTER server extension list 2>&1 | strip)
  lab_list=$($JUPYTER labextension list 2>&1 | strip)
fi
failed=0
for ext in $server_exts; do
  if grep -qE "nbgrader\.server_extensions\.$ext +enabled" <<<"$server_list" \
     && grep -qE "nbgrader\.server_extensions\.$ext +OK" <<<"$server_list"; then
    echo "install_kernel: server extension nbgrader.server_extensions.$ext enabled OK"
  else
    echo "install_kernel: server extension nbgrader.server_extensions.$ext is NOT enabled" >&2; failed=1
  fi
done
if grep -qE "@jupyter/nbgrader v[0-9.]+ +enabled +OK" <<<"$lab_list" \
   && ! disabled "$lab_list" | grep -q "@jupyter/nbgrader"; then
  echo "install_kernel: lab extension @jupyter/nbgrader enabled OK (all plugins)"
else
  echo "install_kernel: lab extension @jupyter/nbgrader is not enabled (or some plugins are disabled):" >&2
  grep -E "nbgrader" <<<"$lab_list" >&2 || true
  failed=1
fi
exit $failed
