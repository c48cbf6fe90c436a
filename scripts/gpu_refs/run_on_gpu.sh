#!/usr/bin/env bash
# Regenerate the stored reference outputs on a CUDA GPU, check them, and print a summary: one command.
#
#   bash scripts/gpu_refs/run_on_gpu.sh        (from anywhere; PYTHON=... picks the interpreter)
#
# Needs torch with CUDA and numpy (no keras). DEVICE=cpu runs the same steps on the CPU (a dry run of this script). Where $OUT is set (the lent device machine), the new files and the
# log are also left there as gpu_refs_cases.tar.gz and run_on_gpu.log; unpack the archive at the repository root
# with `tar xzf gpu_refs_cases.tar.gz`, then run `python -m pytest tests/graders/test_gpu_references.py` on the CPU.
set -uo pipefail
cd "$(dirname "$0")/../.." || exit 2
PYTHON=${PYTHON:-python3}
export DEVICE=${DEVICE:-cuda}
export PYTHONUNBUFFERED=1
log=${OUT:+$OUT/run_on_gpu.log}
exec > >(tee "${log:-/dev/null}") 2>&1

echo "== device"
nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv || nvidia-smi || true
"$PYTHON" - <<'EOF' || exit 2
import os, numpy, torch
print(f"torch {torch.__version__}, CUDA {torch.version.cuda}, cuDNN {torch.backends.cudnn.version()}, numpy {numpy.__version__}")
if os.environ["DEVICE"] == "cuda":
    assert torch.cuda.is_available(), "torch sees no CUDA device"
    print(f"{torch.cuda.get_device_name()} sm_{''.join(map(str, torch.cuda.get_device_capability()))}")
EOF

echo "== generate (--device $DEVICE)"
start=$SECONDS
"$PYTHON" -m scripts.gpu_refs.generate --device "$DEVICE" || exit 1
echo "generation took $((SECONDS - start)) s"

echo "== check: a second run must reproduce the stored arrays"
"$PYTHON" -m scripts.gpu_refs.generate --device "$DEVICE" --check | tail -n 25
check=${PIPESTATUS[0]}

echo "== the CPU tests of the stored files (float64 recomputation, sha256, a CPU --check against these GPU files)"
"$PYTHON" -m pytest -q --noconftest -p no:cacheprovider tests/graders/test_gpu_references.py
tests=$?

if [ -n "${OUT:-}" ]; then
    tar czf "$OUT/gpu_refs_cases.tar.gz" autograder/graders/gpu_refs/cases
fi

echo "== summary"
"$PYTHON" - <<'EOF'
from autograder.graders.gpu_refs import store
stored = skipped = 0
for name in store.case_names():
    m = store.read_manifest(store.ROOT / name)
    worst = max(m["outputs"], key=lambda e: e["float64_vs_this"]["worst_ratio_to_tolerance"])
    stored, skipped = stored + len(m["outputs"]), skipped + len(m["skipped"])
    print(f"{name:40s} {len(m['outputs']):2d} stored {len(m['skipped']):2d} skipped; worst ratio to tolerance "
          f"{worst['float64_vs_this']['worst_ratio_to_tolerance']:.3f} ({worst['backend']}/{worst['dtype']})")
    for s in m["skipped"]:
        if s["reason"].startswith(("rejected", "dispatched", "the output is not finite")):
            print(f"    ! {s['backend']}/{s['dtype']}: {s['reason']}")
size = sum(p.stat().st_size for p in store.ROOT.rglob("*") if p.is_file())
print(f"{stored} outputs stored, {skipped} skipped, {size / 1e6:.2f} MB, device {m['device']['name']}")
EOF
echo "check exit $check, tests exit $tests"
[ "$check" -eq 0 ] && [ "$tests" -eq 0 ]
