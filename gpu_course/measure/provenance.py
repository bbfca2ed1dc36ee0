"""What really ran: the objects a run was handed read back into its config, and every
request the machine could not honour recorded as a downgrade."""
from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any

from ..config import Experiment, worded

DEFAULTS = {f.name: f.default for f in fields(Experiment)}
OWN_DATA_FIELDS = ("dataset", "train_size", "image_size")  # an own data set's own facts


def reconcile(cfg: Experiment, found: dict, source: str, authoritative: tuple = ()) -> Experiment:
    """cfg with the values `found` on the run's objects; other set values refused, bar `authoritative`."""
    changes = {}
    for name, value in found.items():
        if value is None or getattr(cfg, name) == value:
            continue
        if getattr(cfg, name) != DEFAULTS[name] and name not in authoritative:
            mine, theirs = (worded(name, v, cfg.engine) for v in (getattr(cfg, name), value))
            raise ValueError(f"{name}={mine!r} in the Experiment, but {source} has {name}={theirs!r}: make "
                             f"them agree (set {name}={theirs!r}, or build {source} from the Experiment)")
        changes[name] = value
    return cfg.replace(**changes) if changes else cfg


def downgrades(requested: Experiment, ran: Experiment, why: dict[str, str]) -> list[dict]:
    """One {"field", "requested", "ran", "why"} per field changed between request and run."""
    return [not_as_asked(name, before, getattr(ran, name), why[name])
            for name, before in requested.to_dict().items() if before != getattr(ran, name) and name in why]


def not_as_asked(field: str, requested, ran, why: str) -> dict:
    """A downgrade that the config cannot express (data_on_gpu=True held in CPU memory)."""
    return {"field": field, "requested": requested, "ran": ran, "why": why}


@dataclass(frozen=True)
class Resolved:
    """A request resolved once for this machine: config, devices, downgrades, notice."""

    requested: Experiment
    cfg: Experiment
    devices: list
    downgrades: list
    notice: str | None = None


def notice(*parts: str | None) -> str | None:
    """The notices that were given, as one line (None when there were none)."""
    return " ".join(p for p in parts if p) or None


@dataclass
class Parts:
    """What an adapter's `build(cfg)` made: `net, train_iter, val_iter, optimizer = parts`."""

    net: Any
    train_iter: Any
    val_iter: Any
    optimizer: Any
    devices: list
    cfg: Experiment                       # what runs on these devices
    downgrades: list = field(default_factory=list)
    notice: str | None = None

    def __iter__(self):
        return iter((self.net, self.train_iter, self.val_iter, self.optimizer))

    def fill(self, net=None, train_iter=None, optimizer=None) -> "Parts":
        """These parts with what `record` was given explicitly in place of their own."""
        given = {"net": net, "train_iter": train_iter, "optimizer": optimizer}
        return replace(self, **{k: v for k, v in given.items() if v is not None})

    @classmethod
    def of(cls, cfg: "Experiment | Parts", devices: list | None = None) -> "Parts":
        """`cfg` when `build` made it, else parts of cfg alone on `devices`."""
        return cfg if isinstance(cfg, Parts) else cls(None, None, None, None, devices, cfg)
