"""One frozen dataclass, read by both tracks, holds every knob of an experiment."""
from __future__ import annotations

import dataclasses
import json
import math
import os
from dataclasses import dataclass, fields
from enum import StrEnum
from pathlib import Path
from typing import Any

ENGINES = ("gluon", "pytorch")
DATASETS = ("synthetic", "cifar10", "folder")
MODELS = ("resnet20", "resnet56", "resnet110", "wrn16_10", "wrn28_10", "tiny")
OWN = "own"  # a record's model or dataset when the user handed in their own
# refused away from their defaults for Gluon, which would ignore them
PYTORCH_ONLY = ("pin_memory", "persistent_workers", "prefetch_factor", "data_on_gpu",
                "channels_last")
# fields of old run records: `from_dict` drops them; Experiment(...) says where they went
RETIRED = {"momentum": "optimizer_params, e.g. (('momentum', 0.9),)",
           "wd": "optimizer_params, e.g. (('wd', 5e-4),)",
           "lr_factor": "LR_FACTOR, the talk's 0.5",
           "skip_corrupt": "load_datasets(cfg, skip_corrupt=True)",
           "kvstore": "the launch: 'device' in one process, 'dist_sync' in a parameter-server job",
           "convolutions": None, "graphed_eval": None, "autotune": None, "graph_steps": None}
# defaults unless optimizer_params says otherwise; LR_FACTOR: the step schedules' multiplier
MOMENTUM, WEIGHT_DECAY, LR_FACTOR = 0.9, 5e-4, 0.5
AUGMENTS = ("standard", "none", "heavy")
DATA_FORMATS = ("loose", "preresized", "packed", "memory")


class Graph(StrEnum):
    """How the network runs; records keep these words, each track has its own (`word`)."""

    EAGER = "eager"       # Gluon: imperative; PyTorch: eager
    HYBRID = "hybrid"     # Gluon: net.hybridize(); PyTorch: torch.compile(net)
    STATIC = "static"     # Gluon: hybridize(static_alloc=True, static_shape=True);
                          # PyTorch: CUDA graphs (torch.compile(mode="reduce-overhead"))

    @classmethod
    def of(cls, word) -> "Graph":
        """The Graph a canonical or either track's word names (any case, "_" or " " for "-")."""
        text = str(word).strip().lower().replace("_", "-").replace(" ", "-")
        found = next((g for g in cls if text in (g.value, *(w[g] for w in GRAPH_WORDS.values()))),
                     None)
        if found is None:
            tracks = "; ".join(f"{e}: {', '.join(w.values())}" for e, w in GRAPH_WORDS.items())
            raise ValueError(f"graph={word!r} is not allowed; allowed: {tracks} (or {', '.join(cls)})")
        return found

    def word(self, engine: str) -> str:
        """How `engine`'s track names this graph (the canonical word for another engine)."""
        return GRAPH_WORDS.get(engine, {}).get(self, self.value)


GRAPH_WORDS = {"gluon": dict(zip(Graph, ("imperative", "hybridize", "static-alloc"))),   # in Graph's order
               "pytorch": dict(zip(Graph, ("eager", "compile", "cuda-graphs")))}


def worded(name: str, value, engine: str):
    """A setting's value in `engine`'s words (only a graph has words of its own)."""
    if name != "graph" or value is None:
        return value
    try:
        return Graph.of(value).word(engine)
    except ValueError:
        return value


class SampleOrder(StrEnum):
    """The order a packed file's records are read in an epoch (`data.order`)."""

    RANDOM = "random"
    QUASI_RANDOM = "quasi_random"
    SEQUENTIAL = "sequential"


class PageCache(StrEnum):
    """What the page cache holds of a packed file at each epoch's start (DROP: nothing)."""

    KEEP = "keep"
    DROP = "drop"


DTYPES = ("float32", "float16", "bfloat16")
MOCKS = ("none", "loader", "trainer")
# PyTorch's "lars" and "signum" are the course's own; "nag" is SGD with nesterov=True
OPTIMIZERS = {"gluon": ("sgd", "nag", "lbsgd", "lars", "lamb", "signum", "ftml", "dcasgd", "adam"),
              "pytorch": ("sgd", "nag", "lars", "signum", "adam", "adamw")}
SCHEDULERS_BY_ENGINE = {"gluon": ("none", "factor", "multifactor", "poly", "cosine"),
                        "pytorch": ("none", "factor", "multifactor", "poly", "cosine", "onecycle")}
SEED_MAX = 2**32 - 1  # NumPy's and MXNet's seeds are 32-bit
TRUTHY = ("1", "true", "yes", "on", "y", "t")
FALSY = ("0", "false", "no", "off", "n", "f", "")
# float fields: (lowest allowed, highest allowed, whether the lowest itself is allowed)
_FLOAT_RANGES = {"lr": (0, math.inf, False), "warmup_epochs": (0, math.inf, True),
                 "monitor_interval": (0, 3600, False)}   # an hour between samples at most


@dataclass(frozen=True)
class Experiment:
    """Every setting of one training run, with its unit."""

    name: str = "run"                 # label of the run record and the plots
    engine: str = "gluon"             # "gluon" (MXNet) | "pytorch"
    # -- data ------------------------------------------------------------------------
    dataset: str = "synthetic"        # "synthetic" (generated CIFAR-10 stand-in) | "cifar10" | "folder"
    data_dir: str | None = None       # where datasets live; None = the repo's data/
    train_size: int = 50_000          # training images per epoch
    test_size: int = 10_000           # validation images
    image_size: int = 32              # pixels a side fed to the model
    data_format: str = "loose"        # dataset="folder": see DATA_FORMATS
    sample_order: str = "random"      # data_format="packed": `SampleOrder`
    page_cache: str = "keep"          # data_format="packed": `PageCache`
    augment: str = "standard"         # "standard" (pad-4 crop, flip, normalise) | "none" | "heavy"
    # -- model -----------------------------------------------------------------------
    model: str = "resnet20"           # CIFAR ResNet/WRN as in GluonCV's zoo, or "tiny"
    # -- input pipeline --------------------------------------------------------------
    batch_size: int = 64              # images per device per step
    num_workers: int = 1              # loader processes; 0 = load in the training process
    pin_memory: bool = False          # PyTorch: page-locked host batches (faster copies)
    persistent_workers: bool = False  # PyTorch: keep workers alive between epochs
    prefetch_factor: int = 2          # PyTorch: batches each worker prepares ahead
    data_on_gpu: bool = False         # PyTorch: whole dataset + augmentation on the GPU
    mock: str = "none"                # "loader": one batch served forever (compute ceiling);
                                      # "trainer": batches fetched and dropped (input ceiling)
    # -- compute ---------------------------------------------------------------------
    graph: str = "eager"              # how the network runs (`Graph`), in either track's words
    dtype: str = "float32"            # "float32" | "float16" | "bfloat16" (Gluon: CPU only)
    channels_last: bool = False       # PyTorch: NHWC memory layout for tensor cores
    num_gpus: int = 1                 # devices to train on; CPU contexts when no GPU exists
    threads: int | None = None        # intra-op (OpenMP) threads; None = the framework's
                                      # default (MXNet fixes it at import: OMP_NUM_THREADS)
    # -- optimisation ----------------------------------------------------------------
    optimizer: str = "sgd"            # see OPTIMIZERS
    lr: float = 0.1                   # learning rate at lr_base_batch images per step
    lr_base_batch: int | None = None  # if set, lr scales linearly: lr * global_batch / this
    optimizer_params: tuple = ()      # (key, value) pairs: "momentum", "wd" and the
                                      # optimizer's own, e.g. (("batch_scale", 4),)
    lr_scheduler: str = "none"        # see SCHEDULERS_BY_ENGINE
    lr_steps: tuple = ()              # multifactor: epochs at which lr *= LR_FACTOR;
                                      # factor: (every_n_epochs,)
    warmup_epochs: float = 0.0        # linear warm-up from 0 to lr over this many epochs
    epochs: int = 3
    seed: int = 0
    # -- measurement -----------------------------------------------------------------
    warmup_steps: int = 5             # first steps of the run left out of samples/s
    max_steps: int | None = None      # cut each epoch after this many steps (smoke runs)
    monitor_interval: float = 0.5     # seconds between GPU/CPU samples

    def __new__(cls, *args, **values):
        _refuse_unknown(values)   # before the dataclass's own TypeError, with the names
        return super().__new__(cls)

    def __post_init__(self) -> None:
        for f in fields(self):
            if str(f.type).startswith("bool"):
                _boolean(self, f.name)
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError(f"name={self.name!r} must be a non-empty string")
        for name in _FLOAT_RANGES:
            _finite_number(self, name)
        for name, allowed in (("engine", ENGINES), ("dataset", DATASETS + (OWN,)),
                              ("augment", AUGMENTS), ("data_format", DATA_FORMATS),
                              ("sample_order", tuple(SampleOrder)), ("page_cache", tuple(PageCache)),
                              ("dtype", DTYPES), ("mock", MOCKS)):
            _choice(self, name, allowed)
        object.__setattr__(self, "graph", Graph.of(self.graph).value)
        _choice(self, "optimizer", OPTIMIZERS[self.engine], OPTIMIZERS)
        _choice(self, "lr_scheduler", SCHEDULERS_BY_ENGINE[self.engine], SCHEDULERS_BY_ENGINE)
        if self.model not in MODELS + (OWN,):
            raise ValueError(f"model={self.model!r} is unknown; allowed: {', '.join(MODELS)}")
        self._refuse_what_does_not_apply()
        _followable(self, "data_dir")
        for name in ("train_size", "test_size", "batch_size", "epochs", "image_size",
                     "prefetch_factor"):
            at_least(name, getattr(self, name), 1)
        for name in ("num_workers", "num_gpus", "warmup_steps", "seed"):
            at_least(name, getattr(self, name), 0)
        if self.seed > SEED_MAX:
            raise ValueError(f"seed={self.seed!r} is too large; allowed: 0..{SEED_MAX}")
        for name in ("max_steps", "lr_base_batch"):
            if getattr(self, name) is not None:
                at_least(name, getattr(self, name), 1)
        if self.threads is not None and (not isinstance(self.threads, int)
                                         or isinstance(self.threads, bool) or self.threads < 1):
            raise ValueError(f"threads={self.threads!r} must be None or an integer >= 1")
        if self.warmup_epochs < 0 or self.warmup_epochs > self.epochs:
            raise ValueError(f"warmup_epochs={self.warmup_epochs!r} must be in [0, epochs={self.epochs}]")
        steps = self.lr_steps
        if isinstance(steps, (str, bytes, dict)) or not hasattr(steps, "__iter__") \
                or any(not (_is_number(s) and 0 < s < math.inf) for s in steps) \
                or list(steps) != sorted(steps):
            raise ValueError(f"lr_steps={steps!r} must be increasing epoch numbers > 0, e.g. (2, 4)")
        if self.lr_scheduler == "multifactor" and not steps:
            raise ValueError("lr_scheduler='multifactor' needs lr_steps, e.g. (2, 4)")
        if self.lr_scheduler == "onecycle" and self.warmup_epochs:
            raise ValueError("lr_scheduler='onecycle' has its own warm-up; set warmup_epochs=0")
        object.__setattr__(self, "lr_steps", tuple(self.lr_steps))
        object.__setattr__(self, "optimizer_params", _pairs(self.optimizer_params))
        if not (_is_number(self.momentum) and 0 <= self.momentum < 1):
            raise ValueError(f"optimizer_params: momentum={self.momentum!r} must be in [0, 1)")
        if not (_is_number(self.wd) and 0 <= self.wd < math.inf):
            raise ValueError(f"optimizer_params: wd={self.wd!r} must be a finite number >= 0")

    def _refuse_what_does_not_apply(self) -> None:
        defaults = {f.name: f.default for f in fields(self)}
        refused = [(name, "engine='pytorch'") for name in PYTORCH_ONLY if self.engine == "gluon"]
        if self.dataset != "folder":
            refused.append(("data_format", "dataset='folder'"))
        if self.data_format != "packed":
            refused += [("sample_order", "data_format='packed'"), ("page_cache", "data_format='packed'")]
        if self.engine == "pytorch" and self.dataset in ("synthetic", "cifar10"):   # fed at 32 px
            refused.append(("image_size", "dataset='folder'"))
        for name, where in refused:
            value = getattr(self, name)
            if value != defaults[name]:
                raise ValueError(f"{name}={value!r} applies to {where} only; leave it at {defaults[name]!r}")

    @property
    def global_batch(self) -> int:
        """Images per optimizer step over all devices."""
        return self.batch_size * max(self.num_gpus, 1)

    @property
    def momentum(self) -> float:
        """The optimizer's momentum, where it has one: optimizer_params' or MOMENTUM."""
        return dict(self.optimizer_params).get("momentum", MOMENTUM)

    @property
    def wd(self) -> float:
        """The optimizer's weight decay (L2): optimizer_params' or WEIGHT_DECAY."""
        return dict(self.optimizer_params).get("wd", WEIGHT_DECAY)

    @property
    def scaled_lr(self) -> float:
        """The learning rate actually used: linearly scaled when lr_base_batch is set."""
        return self.lr * (self.global_batch / self.lr_base_batch if self.lr_base_batch else 1)

    def replace(self, **changes: Any) -> "Experiment":
        """A copy with some fields changed (validated like the original)."""
        _refuse_unknown(changes)
        return dataclasses.replace(self, **changes)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Experiment):
            return NotImplemented
        return self.to_dict() == other.to_dict()

    def to_dict(self) -> dict:
        """The fields, JSON-safe (a non-finite number as "inf"/"nan")."""
        return {f.name: _encode(getattr(self, f.name)) for f in fields(self)}

    @classmethod
    def from_dict(cls, values: dict) -> "Experiment":
        """Build from a dict (a run record's config), RETIRED fields left out; a float field's
        None comes back as nan, so validation names what is wrong."""
        return cls(**{k: math.nan if k in _FLOAT_RANGES and v is None else _decode(v)
                      for k, v in values.items() if k not in RETIRED})

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)


def _refuse_unknown(names) -> None:
    """A ValueError naming each key that is no Experiment field."""
    if unknown := sorted(set(names) - set(Experiment.__dataclass_fields__)):
        said = [n + (f" (retired{'; now ' + RETIRED[n] if RETIRED[n] else ''})"
                     if n in RETIRED else "") for n in unknown]
        allowed = ", ".join(Experiment.__dataclass_fields__)
        raise ValueError(f"unknown Experiment field(s): {', '.join(said)}; allowed: {allowed}")


def check_gpus(requested: int, available: int) -> tuple[str, int, str | None]:
    """(kind, count, notice): no GPU at all runs on `requested` CPU contexts, with a notice."""
    if requested == 0:
        return "cpu", 1, None
    if available == 0:
        return "cpu", requested, f"No GPU found: running on the CPU with {requested} device context(s)."
    if requested > available:
        raise ValueError(f"num_gpus={requested} is too many here; allowed: 0..{available}")
    return "gpu", requested, None


def parse_value(field_name: str, text: str) -> Any:
    """Turn a command-line/hyperparameter string into the field's type."""
    _refuse_unknown([field_name])
    kind = str(Experiment.__dataclass_fields__[field_name].type)
    try:
        if kind.startswith("bool"):
            return BOOL_WORDS[text.strip().lower()]
        if "None" in kind and text.strip().lower() in ("", "none"):
            return None
        if kind.startswith("int"):
            return int(text)
        if kind.startswith("float"):
            return float(text)
        if kind.startswith("tuple"):
            if field_name == "optimizer_params":
                parsed = json.loads(text) if text.strip().startswith("{") else dict(
                    kv.split("=", 1) for kv in text.split(",") if kv)
                return tuple((k, _number(v)) for k, v in parsed.items())
            return tuple(_number(v) for v in text.replace(" ", "").split(",") if v)
        return text
    except (ValueError, KeyError):
        raise ValueError(f"{field_name}={text!r} is not a valid {kind}") from None


_NON_FINITE = ("inf", "-inf", "nan")


def _encode(value: Any) -> Any:
    """inf, -inf and nan as strings, inside tuples and pairs too."""
    if isinstance(value, (tuple, list)):
        return type(value)(_encode(v) for v in value)
    return repr(value) if isinstance(value, float) and not math.isfinite(value) else value


def _decode(value: Any) -> Any:
    if isinstance(value, (tuple, list)):
        return type(value)(_decode(v) for v in value)
    return float(value) if isinstance(value, str) and value.strip().lower() in _NON_FINITE else value


def smoke_mode(value: str | None = None) -> bool:
    """Whether GPU_COURSE_SMOKE asks for smoke mode (tiny sizes)."""
    text = os.environ.get("GPU_COURSE_SMOKE", "") if value is None else value
    if (low := str(text).strip().lower()) in TRUTHY + FALSY:
        return low in TRUTHY
    on, off = ", ".join(TRUTHY), ", ".join(f for f in FALSY if f)
    raise ValueError(f"GPU_COURSE_SMOKE={text!r} is not allowed; allowed: {on} (on), {off} or unset")


def _finite_number(cfg: Experiment, name: str) -> None:
    """A float field must be a real, finite number inside its range."""
    value = getattr(cfg, name)
    low, high, low_ok = _FLOAT_RANGES[name]
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        hint = " (write it without quotes)" if isinstance(value, str) else ""
        raise ValueError(f"{name}={value!r} must be a number, not {type(value).__name__}{hint}")
    if not math.isfinite(value):
        raise ValueError(f"{name}={value!r} must be a finite number")
    if value < low or (value == low and not low_ok) or value > high:
        close = "]" if math.isfinite(high) else ")"
        raise ValueError(f"{name}={value!r} must be in {'[' if low_ok else '('}{low}, {high}{close}")


def _followable(cfg: Experiment, name: str) -> None:
    """A path field whose links lead somewhere (a loop would fail deep in data loading)."""
    if (value := getattr(cfg, name)) is None:
        return
    if not isinstance(value, (str, os.PathLike)) or not str(value).strip():
        raise ValueError(f"{name}={value!r} is not a folder; allowed: None or a path")
    try:
        Path(value).expanduser().resolve()
    except (RuntimeError, OSError) as err:  # RuntimeError: Python < 3.13's symlink loop
        raise ValueError(f"{name}={str(value)!r} is a loop of links ({err}); name a real folder") from None


def _pairs(params: Any) -> tuple:
    """optimizer_params as ((name, value), ...): from a dict or from pairs."""
    params = params.items() if isinstance(params, dict) else params
    try:
        pairs = None if isinstance(params, (str, bytes)) else [tuple(p) for p in params]
    except TypeError:
        pairs = None
    if pairs is None or any(len(p) != 2 or not isinstance(p[0], str) for p in pairs):
        raise ValueError(f"optimizer_params={params!r} must be a dict or (name, value) pairs")
    return tuple((k, _param_value(k, v)) for k, v in pairs)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


# optimizer settings whose value is a word, and the words they take
WORD_PARAMS = {"warmup_strategy": ("linear", "power2", "sqrt", "lars")}  # MXNet's LBSGD


def _param_value(name: str, value: Any) -> Any:
    """An optimizer setting's value: a number, a bool, a tuple of numbers or a known word."""
    if isinstance(value, list):  # JSON has no tuples
        value = tuple(value)
    if name in WORD_PARAMS:
        if value not in WORD_PARAMS[name]:
            raise ValueError(f"optimizer_params: {name}={value!r} is not allowed; allowed: "
                             + ", ".join(WORD_PARAMS[name]))
        return value
    ok = (_is_number(value) or isinstance(value, bool)
          or (isinstance(value, tuple) and value and all(_is_number(v) for v in value)))
    if not ok or (_is_number(value) and math.isnan(value)):
        raise ValueError(f"optimizer_params: {name}={value!r} must be a number, true/false "
                         "or a tuple of numbers")
    return value


def _number(text: Any) -> Any:
    if not isinstance(text, str):
        return text
    if (word := text.strip().lower()) in ("true", "false"):  # an optimizer switch (nesterov=true)
        return word == "true"
    for cast in (int, float):
        try:
            return cast(text)
        except ValueError:
            pass
    return text


# a yes/no field's words (an empty string is no answer: refused)
BOOL_WORDS = {**{w: True for w in TRUTHY}, **{w: False for w in FALSY if w}}


def _boolean(cfg: Experiment, name: str) -> None:
    """A yes/no field as a real bool from True/False, numpy's bool, 1/0 or one of BOOL_WORDS."""
    value = getattr(cfg, name)
    if isinstance(value, str) and value.strip().lower() in BOOL_WORDS:
        value = BOOL_WORDS[value.strip().lower()]
    elif type(value).__name__ not in ("bool_", "bool8") and not (isinstance(value, int)
                                                                 and value in (0, 1)):
        raise ValueError(f"{name}={value!r} must be True or False (or {', '.join(BOOL_WORDS)})")
    object.__setattr__(cfg, name, bool(value))


def _choice(cfg: Experiment, name: str, allowed: tuple, by_engine: dict | None = None) -> None:
    value = getattr(cfg, name)
    if value not in allowed:
        others = [e for e, names in (by_engine or {}).items() if value in names]   # adamw on Gluon
        hint = f" with engine={cfg.engine!r} ({value!r} needs engine={others[0]!r})" if others else ""
        raise ValueError(f"{name}={value!r} is not allowed{hint}; allowed: {', '.join(allowed)}")


def at_least(name: str, value, low: int) -> None:
    """A whole number setting (a field, repeats) of at least `low`, else a ValueError naming it."""
    if not isinstance(value, int) or isinstance(value, bool) or value < low:
        raise ValueError(f"{name}={value!r} must be an integer >= {low}")


FIELDS = tuple(f.name for f in fields(Experiment))
