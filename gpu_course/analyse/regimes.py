"""Two ladders side by side (lesson 08): one ladder on two networks, and what a reference
ladder differs in from this machine's."""
from __future__ import annotations

import math

import pandas as pd

from . import alike, anatomy as anatomy_, metrics, noise
from .anatomy import FIXES
from ..ladder import RUNG_SETTINGS


def regimes_table(light, heavy) -> pd.DataFrame:
    """One row a rung both ladders walked: in each, what held the step before, gain and verdict."""
    names = [[str(metrics.representative(r).name) for r in ladder_] for ladder_ in (light, heavy)]
    models = (network(light), network(heavy))
    rows = []
    for name in [n for n in names[0][1:] if n in names[1][1:]]:
        row = {"rung": name}
        for ladder_, named, model in zip((light, heavy), names, models):
            i = named.index(name)
            before, after = ladder_[i - 1], ladder_[i]
            v = noise.compare(before, after, varies=RUNG_SETTINGS)
            changed = alike.settings(metrics.representative(before),
                                     metrics.representative(after),
                                     ignore=alike.SAME_WORK | {"epochs"})
            held = anatomy_.anatomy(before).bound
            row.setdefault("change", ", ".join(sorted(changed)))
            row[f"held by ({model})"] = str(held)
            row[f"gain ({model})"] = v.ratio
            row[f"verdict ({model})"] = str(v.kind)
            paid = v.kind == noise.Kind.FASTER
            row[f"gain beyond noise ({model})"] = v.ratio if paid else math.nan
            row[f"aimed ({model})"] = ("yes" if FIXES[held] & set(changed) else "no") \
                if paid and held in FIXES else ""
        paid = [m for m in models if not math.isnan(row[f"gain beyond noise ({m})"])]
        row["paid on"] = {2: "both", 1: f"{paid[0]} only" if paid else "", 0: "neither"}[len(paid)]
        rows.append(row)
    return pd.DataFrame(rows)


def network(ladder_) -> str:
    return str(metrics.representative(ladder_[0]).config.get("model", "?"))


def beside_table(reference, mine) -> pd.DataFrame:
    """What the reference ladder differs in from this machine's."""
    from ..show.plots import hardware_caption
    def value(runs, field) -> str:
        values = {alike.value(r, field) for r in runs}
        if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            low, high = min(values), max(values)
            return f"{low:,}" if low == high else f"{low:,}–{high:,}"
        return " or ".join(sorted(map(str, values)))
    rows = [{"what": field.replace("_", " "), "the reference": value(reference, field),
             "this ladder": value(mine, field)}
            for field in ("model", "dataset", "train_size", "epochs")]
    rows.append({"what": "machine", "the reference": hardware_caption(reference),
                 "this ladder": hardware_caption(mine)})
    return pd.DataFrame([r for r in rows if r["the reference"] != r["this ladder"]])
