#!/usr/bin/env bash
# The course's checks on a machine with one GPU, as one command within a time budget:
#
#   bash tools/gpu_session.sh [check] [--budget S] [--notebooks NN,NN] [--steps LIST]
#   bash tools/gpu_session.sh ladder  [--budget S] [--repeats N] [--model NAME] [--parts LIST]
#   (either with --rehearse: the same on a CPU, small, to try the command)
#
# In order:
#   1. Where the machine's Python (python3, or $GPU_PYTHON) lacks Jupyter's kernel and
#      client (ipykernel, nbclient), it installs the wheels in .whl/ into /tmp/site, with
#      no network (`make gpu-wheels` fetches them on a machine that has one).
#   2. nvidia-smi's view of the card, before anything runs: $OUT/nvidia-smi.csv.
#   3. check (the default): tools.gpu_check within --budget seconds (default 480): every
#      PyTorch notebook at smoke size, then at the check's size the most needed first,
#      then the ladder, the gpu-marked tests and the monitor against nvidia-smi
#      (`python -m tools.gpu_check --plan` lists it). It writes gpu-check.tar.gz,
#      summary.md and gpu-check.json into $OUT.
#      ladder: tools.reference's --parts (default machine,ladder: the reference ladder at
#      full size) over --repeats walks (default 3, interleaved) of --model (default the
#      ladder's ResNet-20), stopped after --budget seconds (default 600; one walk of
#      ResNet-20's ladder took 171 s on an H200). Whatever it recorded, finished or not,
#      is packed into $OUT/reference.tar.gz, beside ladder.txt (where the walk finished)
#      and ladder-log.txt (`python -m tools.reference --summary FOLDER` reads the records).
#
# It runs from any folder (the checkout is the one this script is in); $OUT, default
# ./gpu-session, is taken from where it was started. A ladder that recorded no run fails
# the command (exit 1). Nothing here changes the GPU's settings.
set -u
usage="usage: gpu_session.sh [check|ladder] [--budget S] [--notebooks NN,NN] [--steps LIST]"\
" [--repeats N] [--model NAME] [--parts LIST] [--rehearse]"
fail() { echo "gpu-session: $1" >&2; echo "$usage" >&2; exit 2; }
MODE=check
case ${1:-} in check|ladder) MODE=$1; shift ;; esac
BUDGET="" NOTEBOOKS="" STEPS="" REPEATS=3 MODEL="" PARTS=machine,ladder REHEARSE=""
while [ $# -gt 0 ]; do
    case $1 in
        --budget|--notebooks|--steps|--repeats|--model|--parts)
            [ $# -ge 2 ] || fail "$1 needs a value"
            case $1 in
                --budget) BUDGET=$2 ;; --notebooks) NOTEBOOKS=$2 ;; --steps) STEPS=$2 ;;
                --repeats) REPEATS=$2 ;; --model) MODEL=$2 ;; --parts) PARTS=$2 ;;
            esac
            shift 2 ;;
        --rehearse) REHEARSE=1; shift ;;
        *) fail "$1 is not an option (the mode, check or ladder, comes first)" ;;
    esac
done
if [ "$MODE" = check ]; then BUDGET=${BUDGET:-480}; else BUDGET=${BUDGET:-600}; fi
[[ $BUDGET =~ ^[0-9]+$ ]] && [ "$BUDGET" -gt 0 ] || fail "--budget $BUDGET: a whole number of seconds above 0"
[[ $REPEATS =~ ^[0-9]+$ ]] && [ "$REPEATS" -gt 0 ] || fail "--repeats $REPEATS: a whole number above 0"
if [ "$MODE" = ladder ] && [ -n "$NOTEBOOKS$STEPS" ]; then fail "--notebooks and --steps are the check's"; fi

OUT=${OUT:-gpu-session}
PY=${GPU_PYTHON:-python3}
mkdir -p "$OUT" || { echo "gpu-session: OUT=$OUT: cannot make that folder" >&2; exit 1; }
OUT=$(cd "$OUT" && pwd)
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
[ -f "$ROOT/tools/gpu_check.py" ] || { echo "gpu-session: $ROOT is not a gpu-course checkout" >&2; exit 2; }
cd "$ROOT" || exit 2
if ! $PY -c "import nbclient, ipykernel" 2>/dev/null; then
    $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
        --target /tmp/site .whl/*.whl || { echo "gpu-session: the wheels in .whl/ did not install"; exit 1; }
    export PYTHONPATH=/tmp/site
fi
export PYTHONPATH=${PYTHONPATH:+$PYTHONPATH:}$PWD PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=name,driver_version,memory.total,clocks.sm,clocks.max.sm,power.limit \
    --format=csv > "$OUT/nvidia-smi.csv" 2>&1

if [ "$MODE" = check ]; then
    $PY -m tools.gpu_check --budget "$BUDGET" ${NOTEBOOKS:+--notebooks "$NOTEBOOKS"} \
        ${STEPS:+--steps "$STEPS"} ${REHEARSE:+--rehearse} --out "$OUT"
    code=$?
    echo "gpu-session: check exit $code"
    exit $code
fi
REF=$(mktemp -d)/reference
timeout "$BUDGET" $PY -m tools.reference --parts "$PARTS" --repeats "$REPEATS" \
    ${MODEL:+--model "$MODEL"} ${REHEARSE:+--quick} --out "$REF" > "$OUT/ladder-log.txt" 2>&1
code=$?
echo "gpu-session: ladder exit $code"
mkdir -p "$REF"
cp "$REF/ladder.txt" "$OUT/" 2>/dev/null
tar -czf "$OUT/reference.tar.gz" -C "$(dirname "$REF")" reference
runs=$(find "$REF" -name run.json | wc -l)
if [ "$runs" -eq 0 ]; then
    echo "gpu-session: the ladder recorded no run (exit $code); its output: $OUT/ladder-log.txt:" >&2
    tail -n 3 "$OUT/ladder-log.txt" >&2
    exit 1
fi
echo "gpu-session: done; $runs runs recorded"
[ "$code" -eq 0 ] || [ "$code" -eq 124 ] || exit "$code"   # 124: the budget stopped the walk
