"""Lesson 11's exercise: the forward pass with another thread count than the usable
cores, its images/s predicted."""
from __future__ import annotations

from ...analyse import metrics, noise
from ..l11_environment import BUSY_LOAD, MIN_PASSES, label
from .base import MARK, Contradicted, NotYet, exercise
from .judge import DIRECTIONS

SAME_BENCH = ("onednn", "batch", "cpus")   # what the two benchmarks share: threads alone change


@exercise("11.1", "Give the forward pass another thread count than the usable cores and "
                  "predict its images/s.")
def _threads(records, answer) -> str:
    base, mine = _benches(records)
    if base["threads"] == mine["threads"]:
        raise NotYet(f"both benchmarks ran {base['threads']} threads: nothing was changed. Set "
                     f"another count at the line marked {MARK}.")
    other = [f"{key} {base.get(key)} against {mine.get(key)}" for key in SAME_BENCH
             if base.get(key) != mine.get(key)]
    if _framework(base) != _framework(mine):
        other.append(f"framework {_framework(base)} against {_framework(mine)}")
    if other:
        raise NotYet(f"the benchmarks differ in more than their threads: {'; '.join(other)}. "
                     "Change the thread count alone.")
    xs, ys = base.get("step_images_per_s") or [], mine.get("step_images_per_s") or []
    n = min(len(xs), len(ys))
    if n < MIN_PASSES:
        raise NotYet(f"{n} timed passes a benchmark: too few to judge (at least {MIN_PASSES} a "
                     f"side). Time more: gc.sizes(\"11\", bench=dict(batch={base.get('batch', 64)}, "
                     f"steps={2 * MIN_PASSES})), then run the exercise again.")
    if not isinstance(answer, str) or answer not in DIRECTIONS:
        raise NotYet(f"prediction={answer!r}: write down, before you run, what you expect of "
                     f"'{label(mine)}' against '{label(base)}' in images/s: one of "
                     + ", ".join(map(repr, DIRECTIONS)) + ".")
    v = noise.compare_samples(xs, ys, f"{n} timed passes each", base["images_per_s"],
                              mine["images_per_s"])
    pair = f"'{label(mine)}' against '{label(base)}'"
    crowded = _crowded(base, mine)
    if v.kind == DIRECTIONS[answer]:
        said = f"as you predicted ({answer}): {pair} is {v}."
    elif v.kind == noise.Kind.WITHIN_NOISE:
        said = (f"you predicted {answer}; {pair} is {v}: the passes cannot tell {answer} from "
                "the same speed. Not contradicted, not shown: more passes (bench steps) would "
                "tell.")
    elif crowded:
        said = (f"your prediction, {answer}, is untested: {pair} is {v}, but {crowded}: other "
                "programs took turns with the passes, and a pool with a thread per core waits "
                "for any thread they hold up. Run the exercise again while nothing else runs.")
    else:
        measured = next(k for k, kind in DIRECTIONS.items() if kind == v.kind)
        raise Contradicted(f"you predicted {answer}, but {pair} is {v}: {measured}, beyond the "
                           "passes' spread. How many cores can the threads run on at once, and "
                           "what does an OpenMP region wait for before it ends? Then write the "
                           "prediction the passes support.")
    why = _why(base, mine, v, crowded)
    return f"{said} {why[:1].upper()}{why[1:]}"


def _benches(records) -> tuple[dict, dict]:
    """The first two of `records`, each a benchmark (`env.bench`'s result)."""
    records = [] if records is None else list(records) if isinstance(records, (list, tuple)) \
        else [records]
    bad = [r for r in records if not (isinstance(r, dict) and "step_images_per_s" in r
                                      and "threads" in r)]
    if bad:
        raise NotYet(f"{bad[0]!r:.80} is not a benchmark: pass what env.bench returned")
    if len(records) < 2:
        raise NotYet(f"{len(records)} benchmark(s) so far; the exercise compares two: the "
                     f"usable cores' thread count and yours. Set the lines marked {MARK} and "
                     "run the exercise cell.")
    return records[0], records[1]


def _crowded(*benches) -> str:
    """How other programs used the machine during the benchmarks, in words, where they
    kept at least SHARED of a core busy (the load average before one, where a benchmark
    has no reading of its own); "" on a quiet machine."""
    for b in benches:
        other = b.get("other_cores")
        if other is not None and other >= metrics.SHARED:
            return (f"other programs kept {other:.1f} cores busy while '{label(b)}' ran")
        if other is None and b.get("load_average", 0) >= max(BUSY_LOAD, benches[0]["threads"]):
            return (f"the machine was busy (a load average of {b['load_average']:.1f} before "
                    f"'{label(b)}', with {benches[0]['threads']} cores)")
    return ""


def _framework(bench: dict):
    return (bench.get("build") or {}).get("framework")


def _why(base: dict, mine: dict, v: noise.Verdict, crowded: bool) -> str:
    """What the thread count did, in the terms of lesson 11."""
    cores, threads = base["threads"], mine["threads"]
    if threads > cores:
        if v.kind == noise.Kind.SLOWER:
            return (f"{threads} threads take turns on {cores} cores, and an OpenMP region ends "
                    "only when its slowest thread does: each region waits for a thread that "
                    "waits for a core. A container that shows the host's cores gets this by "
                    "default: set OMP_NUM_THREADS (torch.set_num_threads) to the cores it may use.")
        if v.kind == noise.Kind.FASTER and crowded:
            return (f"with other programs holding cores, {threads} threads can win more of the "
                    "CPU's time slices from them than fewer threads do: a share taken from "
                    "those programs, not a setting to keep.")
        return (f"{threads} threads on {cores} cores cost nothing beyond the passes' spread here "
                "(lesson 11's pinned row is the same crowding on one core).")
    if v.kind == noise.Kind.SLOWER:
        return f"{threads} thread(s) leave {cores - threads} of the {cores} cores idle in each operator."
    if v.kind == noise.Kind.FASTER:
        return ("fewer threads than cores finished sooner: "
                + ("other programs held cores, and a thread that shares its core holds up the "
                   "rest of its region." if crowded else "at this batch the extra threads cost "
                   "more in synchronisation than they add (or the cores are hyperthreads "
                   "sharing their arithmetic units)."))
    return (f"{threads} thread(s) did as well as {cores} within the passes' spread: at this batch "
            "the operators gain little from more cores.")
