#!/usr/bin/env bash
# One GPU session's checks, prepared and rehearsed here, run there as one command:
#
#   bash tools/gpu_session.sh [BUDGET_S] [NOTEBOOKS]     # e.g. 300, or 300 08,09,10
#
# On the device machine (its own python3 with PyTorch, no Jupyter, no network) from a copy
# of this checkout that carries .whl/ (`make gpu-wheels` here). In order of priority:
# make gpu-check's plan within BUDGET_S (default 300 s: with the machine's start it
# leaves a quarter-hour lease room for one rerun), then the convolution micro-benchmark.
# Five files land in $OUT: the check's archive, summary.md and JSON, nvidia-smi's view of
# the card before anything ran, and conv_bench.txt. Nothing here changes the GPU's settings.
set -u
OUT=${OUT:-gpu-session}
PY=${GPU_PYTHON:-python3}     # the machine's own Python; a venv's to rehearse here
mkdir -p "$OUT"
if ! $PY -c "import nbclient, ipykernel" 2>/dev/null; then
    $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl || { echo "gpu-session: the wheels in .whl/ did not install"; exit 1; }
    export PYTHONPATH=/tmp/site
fi
export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,power.limit \
    --format=csv > "$OUT/nvidia-smi.csv" 2>&1
$PY -m tools.gpu_check --budget "${1:-300}" ${2:+--notebooks "$2"} \
    ${GPU_SESSION_REHEARSE:+--rehearse} --out "$OUT"
timeout 90 $PY -m tools.conv_bench ${GPU_SESSION_REHEARSE:+--quick} > "$OUT/conv_bench.txt" 2>&1
echo "gpu-session: done; conv_bench exit $?"
