"""Framework-free pieces both tracks use alike."""
from __future__ import annotations

from ..config import OWN

RANK_FIELDS = ("epoch", "epoch_time_s", "samples_per_sec", "data_wait_s", "compute_s",
               "steps", "samples")


def rank_epochs(rows: list[dict]) -> list[dict]:
    """A rank's epoch rows as the job's record keeps them in its notes ("ranks")."""
    return [{k: row.get(k) for k in RANK_FIELDS} for row in rows]


def read_logs(logs) -> list[str]:
    """What each log file (opened "w+" for a process's output) holds; the files closed."""
    outputs = []
    for log in logs:
        log.seek(0)
        outputs.append(log.read())
        log.close()
    return outputs


def steps_per_epoch(train_iter, images: int, per_step: int) -> int:
    """len(train_iter); for an iterable without a length, the full steps of `images`."""
    try:
        return len(train_iter)
    except TypeError:
        return max(1, images // per_step)


def read_dataset(dataset, found: dict, facts: dict) -> None:
    """A loader's dataset: whose it is into found; its class, size and first image's shape into
    facts (a user's dataset: its image size into found)."""
    if not getattr(dataset, "course_dataset", False):
        found["dataset"] = OWN
    facts.update(dataset=type(dataset).__name__, images=len(dataset))
    try:
        shape = [int(d) for d in dataset[0][0].shape]
    except Exception:  # a dataset that cannot be indexed: nothing more to read
        return
    facts["image_shape"] = shape
    if found.get("dataset") == OWN and len(shape) == 3:
        found["image_size"] = shape[-1]


def memory_note(readings: int, counter, device, computed: dict, held_parts) -> dict:
    """The run's "memory" note (`analyse.memory`), its `readings` steps' values to fill in."""
    if readings < 1:
        raise ValueError(f"readings={readings} must be at least 1 (measured steps)")
    return {"counter": counter.value, "device": str(device),
            "computed": {part.value: n for part, n in computed.items()},
            "held_parts": [part.value for part in held_parts], "held": [], "peak": [],
            "at_peak": {}, "most": {}, "files": [], "device_total": None, "allocator": None}
