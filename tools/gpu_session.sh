#!/usr/bin/env bash
# One GPU session's checks, prepared and rehearsed here, run there as one command:
#
#   bash tools/gpu_session.sh [BUDGET_S] [NOTEBOOKS]     # e.g. 240, or 240 08,09,10; 0: no check
#   bash tools/gpu_session.sh ladder [REPEATS] [MODEL] [PARTS]   # issue 26's reference
#                               # instead: ladder 3, or ladder 1 wrn16_10, or ladder 2 ""
#                               # machine,profiles,ladder (the traces lesson 12 compares first)
#   bash tools/gpu_session.sh levers LEVERS [REPEATS]    # issue 28's other levers, a lease
#                               # of their own: levers autotune,batch2048 3
#
# `levers` runs tools.levers with those levers (default 2 walks) for at most 540 s: the
# tuned rung as shipped against each, levers.txt and the runs in levers.tar.gz, whatever
# finished (autotune compiles for minutes the first time, then hits inductor's cache).
#
# `ladder` runs tools.reference's PARTS (default machine,ladder: the reference ladder at
# full size) for at most 540 s and packs whatever it recorded into reference.tar.gz,
# finished or not (the records are the evidence; `gpu-course report` redraws the tables
# from them here).
# On the device machine (its own python3 with PyTorch and Triton, no Jupyter, no network)
# from a copy of this checkout that carries .whl/ (`make gpu-wheels` here). In order of
# priority, each under its own time limit:
#   1. make gpu-check's plan within BUDGET_S (default 240 s): the notebooks and gpu-marked
#      tests that no committed check ran without error on this GPU come first;
#   2. the kernel rung's Triton kernels against F.conv2d on this GPU (conv_kernels.txt);
#   3. the tuned rung as shipped against the Triton convolutions, the graphed validation
#      pass and four steps a graph, in turn, two walks (tools.levers: levers.txt and the
#      runs in levers.tar.gz; autotune and batch 2048 take the `levers` mode's lease);
#   4. the convolution micro-benchmark, cuDNN's passes and the Triton kernels' against
#      each pass's floor (conv_bench.txt).
# Eight files land in $OUT (a device machine returns at most eight): the check's archive,
# summary.md and JSON, nvidia-smi's view of the card before anything ran, and the four
# above. At most 240 + 60 + 170 + 100 s and the wheels' install, about 9.5 minutes: run it
# with timeout_s 590; with the machine's start about 5 minutes of a quarter-hour lease are
# left, enough for a rerun of the last three (BUDGET_S 0). Nothing here changes the GPU's
# settings.
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
if [ "${1:-}" = levers ]; then
    WORK=$(mktemp -d)
    timeout 540 $PY -m tools.levers $REHEARSE --levers "${2:?levers: name them, e.g. autotune,batch2048}" \
        --repeats "${3:-2}" --out "$WORK" > "$OUT/levers-log.txt" 2>&1
    echo "gpu-session: levers exit $?"
    cp "$WORK/levers.tar.gz" "$WORK/levers.txt" "$OUT/" 2>/dev/null
    echo "gpu-session: done; $(find "$WORK" -name run.json | wc -l) runs recorded"
    exit 0
fi
if [ "${1:-240}" != 0 ]; then
    $PY -m tools.gpu_check --budget "${1:-240}" ${2:+--notebooks "$2"} \
        ${GPU_SESSION_REHEARSE:+--rehearse} --out "$OUT"
fi
timeout 60 $PY -m tools.conv_check > "$OUT/conv_kernels.txt" 2>&1
echo "gpu-session: conv_kernels exit $?"
WORK=$(mktemp -d)
# three levers, each alone, two walks: each variant compiles once, then hits the cache
# (the H200 reference's rung took 11 s a run, compilation included)
timeout 170 $PY -m tools.levers $REHEARSE --levers triton,evalgraph,multistep --repeats 2 --out "$WORK" > "$WORK/log.txt" 2>&1
echo "gpu-session: levers exit $?"
cp "$WORK/levers.tar.gz" "$OUT/" 2>/dev/null
if [ -f "$WORK/levers.txt" ]; then cp "$WORK/levers.txt" "$OUT/"; else tail -c 20000 "$WORK/log.txt" > "$OUT/levers.txt"; fi
timeout 100 $PY -m tools.conv_bench $REHEARSE > "$OUT/conv_bench.txt" 2>&1   # SIGTERM: prints what it timed
echo "gpu-session: done; conv_bench exit $?"
