"""What really ran: the objects a run was handed read back into its config, and every
request the machine could not honour recorded as a downgrade.

A notebook may pass `train`/`record` its own network, loader or optimizer. The adapters
read their settings (batch size, workers, dataset size, network class and size) and hand
them here as `found`; `reconcile` writes them into the config the run records. A field
the user set away from its default that disagrees with the object is a contradiction and
refused, naming both values. No deep-learning framework here.
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any

from ..config import Experiment, worded

DEFAULTS = {f.name: f.default for f in fields(Experiment)}
OWN_DATA_FIELDS = ("dataset", "train_size", "image_size")  # an own data set's own facts


def reconcile(cfg: Experiment, found: dict, source: str,
              authoritative: tuple = ()) -> Experiment:
    """cfg with the values `found` on what the run was handed (`source` names it in an
    error, e.g. "the DataLoader"). Values that match, or fields left at their defaults,
    are taken from the object; an explicit, different setting raises ValueError, except
    for `authoritative` fields (a user's own dataset decides its own size: cfg's size
    described a data set that is not used)."""
    changes = {}
    for name, value in found.items():
        if value is None or getattr(cfg, name) == value:
            continue
        if getattr(cfg, name) != DEFAULTS[name] and name not in authoritative:
            mine, theirs = (worded(name, v, cfg.engine) for v in (getattr(cfg, name), value))
            raise ValueError(
                f"{name}={mine!r} in the Experiment, but {source} has "
                f"{name}={theirs!r}: make them agree (set {name}={theirs!r}, or build "
                f"{source} from the Experiment)")
        changes[name] = value
    return cfg.replace(**changes) if changes else cfg


def downgrades(requested: Experiment, ran: Experiment, why: dict[str, str]) -> list[dict]:
    """One {"field", "requested", "ran", "why"} per field whose value changed between the
    request and the config that runs (num_gpus following the devices given is not one)."""
    out = []
    for name, before in requested.to_dict().items():
        after = getattr(ran, name)
        if before != after and name in why:
            out.append({"field": name, "requested": before, "ran": after, "why": why[name]})
    return out


def not_as_asked(field: str, requested, ran, why: str) -> dict:
    """A downgrade that the config cannot express (data_on_gpu=True held in CPU memory)."""
    return {"field": field, "requested": requested, "ran": ran, "why": why}


@dataclass(frozen=True)
class Resolved:
    """A request resolved once for this machine, by the track's `resolve`: the config that
    runs here (`cfg`: bfloat16 for float16 on a PyTorch CPU, say), the devices it runs on,
    each request the machine could not honour with its reason (`downgrades`) and the
    notice to print. `build`, `train` and `record` read it and never resolve again."""

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
    """What an adapter's `build(cfg)` made for a notebook's own loop. It unpacks as
    `net, train_iter, val_iter, optimizer = parts` (the Gluon optimizer is the
    gluon.Trainer); `gc.record(parts)` records them with what really runs."""

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
        def pick(given, own):
            return own if given is None else given
        return replace(self, net=pick(net, self.net), train_iter=pick(train_iter, self.train_iter),
                       optimizer=pick(optimizer, self.optimizer))

    @classmethod
    def of(cls, cfg: "Experiment | Parts", devices: list | None = None) -> "Parts":
        """`cfg` when `build` made it, else parts of cfg alone on `devices`."""
        return cfg if isinstance(cfg, Parts) else cls(None, None, None, None, devices, cfg)
