#!/usr/bin/env bash
# One GPU session's checks, prepared and rehearsed here, run there as one command:
#
#   bash tools/gpu_session.sh [BUDGET_S] [NOTEBOOKS]     # e.g. 240, or 240 08,09,10
#   bash tools/gpu_session.sh ladder [REPEATS] [MODEL] [PARTS]   # issue 26's reference
#                               # instead: ladder 3, or ladder 1 wrn16_10, or ladder 2 ""
#                               # machine,profiles,ladder (the traces lesson 12 compares first)
#
# `ladder` runs tools.reference's PARTS (default machine,ladder: the reference ladder at
# full size) for at most 540 s and packs whatever it recorded into reference.tar.gz,
# finished or not (the records are the evidence; `gpu-course report` redraws the tables
# from them here).
# On the device machine (its own python3 with PyTorch, no Jupyter, no network) from a copy
# of this checkout that carries .whl/ (`make gpu-wheels` here): make gpu-check's plan
# within BUDGET_S (default 240 s), the notebooks and gpu-marked tests that no committed
# check ran without error on this GPU first. Four files land in $OUT: the check's
# archive, summary.md and JSON, and nvidia-smi's view of the card before anything ran.
# Nothing here changes the GPU's settings. (The kernel rung's Triton convolutions, the
# levers and the convolution benchmark this script once ran are in the git history.)
set -u
OUT=${OUT:-gpu-session}
PY=${GPU_PYTHON:-python3}     # the machine's own Python; a venv's to rehearse here
REHEARSE=${GPU_SESSION_REHEARSE:+--quick}
mkdir -p "$OUT"
if ! $PY -c "import nbclient, ipykernel" 2>/dev/null; then
    $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl || { echo "gpu-session: the wheels in .whl/ did not install"; exit 1; }
    export PYTHONPATH=/tmp/site
fi
export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,power.limit \
    --format=csv > "$OUT/nvidia-smi.csv" 2>&1
if [ "${1:-}" = ladder ]; then
    REF=$(mktemp -d)/reference
    timeout 540 $PY -m tools.reference --parts "${4:-machine,ladder}" --repeats "${2:-3}" \
        ${3:+--model "$3"} $REHEARSE --out "$REF" > "$OUT/ladder-log.txt" 2>&1
    echo "gpu-session: ladder exit $?"
    cp "$REF/ladder.txt" "$OUT/" 2>/dev/null
    tar -czf "$OUT/reference.tar.gz" -C "$(dirname "$REF")" reference
    echo "gpu-session: done; $(find "$REF" -name run.json | wc -l) runs recorded"
    exit 0
fi
$PY -m tools.gpu_check --budget "${1:-240}" ${2:+--notebooks "$2"} \
    ${GPU_SESSION_REHEARSE:+--rehearse} --out "$OUT"
