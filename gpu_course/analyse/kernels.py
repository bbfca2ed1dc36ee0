"""Where a GPU trace's kernel time goes, by kind of kernel (lesson 12)."""
from __future__ import annotations

import pandas as pd

from . import profiling


def kernel_table(traces: dict) -> pd.DataFrame:
    """A row a kind of kernel, a column pair a trace (ms a step, % of its kernel time)."""
    frame = None
    for name, path in traces.items():
        part = profiling.kernel_kinds(profiling.read_trace(path)).set_index("kind")
        part = part[["ms_per_step", "share"]].assign(share=lambda f: 100 * f["share"])
        convs = part[part.index.str.startswith("convolutions")]
        part.loc[ALL_CONVOLUTIONS] = [convs["ms_per_step"].sum(), convs["share"].sum()]
        part.loc[ALL_KERNELS] = [part["ms_per_step"].sum() - part.loc[ALL_CONVOLUTIONS,
                                                                      "ms_per_step"], 100.0]
        part.columns = [f"{name}: ms a step", f"{name}: % of kernels"]
        frame = part if frame is None else frame.join(part, how="outer")
    order = [k for k, _ in profiling.KERNEL_KINDS if k in frame.index] + [ALL_CONVOLUTIONS, ALL_KERNELS]
    return frame.loc[order].reset_index().rename(columns={"index": "kind"})


ALL_CONVOLUTIONS, ALL_KERNELS = "all convolutions", "all kernels"


def reference_kernel_traces() -> dict:
    """The H200 reference's GPU traces: the naive rung's and the tuned rung's."""
    from .holistic import REFERENCE_TRACES
    return dict(REFERENCE_TRACES)


def kernel_rows(traces: dict) -> pd.DataFrame:
    """A row a trace: kernel time a step, its largest kind, the GPU busy and idle."""
    frame = kernel_table(traces).set_index("kind")
    kinds = frame.drop([ALL_CONVOLUTIONS, ALL_KERNELS])
    rows = []
    for name, path in traces.items():
        top = kinds[f"{name}: ms a step"].idxmax()
        busy = profiling.gpu_busy_share(profiling.read_trace(path))
        rows.append({"trace": name, "kernels (ms a step)": frame.loc[ALL_KERNELS, f"{name}: ms a step"],
                     "largest kind": top, "largest (ms a step)": kinds.loc[top, f"{name}: ms a step"],
                     "largest (% of kernels)": kinds.loc[top, f"{name}: % of kernels"],
                     "GPU busy": busy, "GPU idle": 1 - busy})
    return pd.DataFrame(rows)
