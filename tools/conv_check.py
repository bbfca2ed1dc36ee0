"""The kernel rung's Triton kernels against F.conv2d, pass by pass, on this machine.

    python -m tools.conv_check                      # on a GPU: bfloat16, float16, float32
    TRITON_INTERPRET=1 python -m tools.conv_check   # on a CPU, Triton's interpreter

Each pass of `gpu_course.tracks.torch.conv_kernels` (forward, input and weight gradient)
on random data of a few shapes, channels last, against F.conv2d and its gradients in
float32: the relative error and its tolerance. The interpreter reads no bfloat16, so a
CPU checks float32 and float16. Exit 1 when one is off, 2 when the kernels cannot run.
"""
from __future__ import annotations

import torch

from gpu_course.tracks.torch.conv_kernels import INTERPRETED, available, check, triton


def main(argv=None) -> int:
    import argparse
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args(argv)
    if not available():
        print("the kernels cannot run here: " + ("Triton is not installed" if triton is None
              else "no GPU (TRITON_INTERPRET=1 runs them on the CPU)"))
        return 2
    on_gpu = torch.cuda.is_available() and not INTERPRETED
    device = torch.device("cuda" if on_gpu else "cpu")
    dtypes = (torch.bfloat16, torch.float16, torch.float32) if on_gpu else \
        (torch.float32, torch.float16)
    rows = [r for dtype in dtypes for r in check(device, dtype)]
    for r in rows:
        print(f"{str(r['dtype']).replace('torch.', ''):>9} {str(r['shape']):>18} {r['pass']:>6} "
              f"error {r['error']:.1e} (tolerance {r['tolerance']:.0e}): "
              f"{'ok' if r['ok'] else 'OFF'}")
    return 0 if all(r["ok"] for r in rows) else 1


if __name__ == "__main__":
    raise SystemExit(main())
