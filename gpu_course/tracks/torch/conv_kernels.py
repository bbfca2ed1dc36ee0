"""The kernel rung: ResNet-20's narrow 3x3 convolutions by purpose-written Triton kernels.

On an H200 the tuned rung is bound by its GPU kernels, and its convolutions are 77 % of
them (4.3 of 5.7 ms a step, read from the committed trace `profile-tuned`). cuDNN runs the
16-channel stage's passes 8-17 times slower than the bytes they must move allow, and
neither its exhaustive search nor the NCHW layout comes closer (`tools.conv_bench`, run
on an H200 on 2026-11-27: gpu_course/reference/gpu-checks/pytorch-h200/). A channel count
of 16 leaves a tensor-core tile almost nothing to reuse: each pass is a stream of bytes.

So here each pass is one implicit GEMM over the output pixels, channels last:

* forward: y[p, co] = sum over the 9 taps t and ci of x[p + t, ci] * W[co, ci, t] - a
  program takes BLOCK_M pixels and loads, for a group of taps (all 9 for 16 channels), the
  tile of their shifted input rows (im2col: COLUMNS = taps x channels wide, zeros outside
  the image and past the ninth tap), then multiplies it by the weight's matching rows in
  one tl.dot;
* input gradient: the forward kernel again, on dy with the weight flipped and transposed
  (for stride 1 and padding 1, dx = conv(dy, W rotated by 180 degrees, in and out swapped));
* weight gradient: dW[co, ci, t] = sum over p of dy[p, co] * x[p + t, ci] - programs split
  the pixels; each loads a block's dy once, multiplies it by the block's im2col tile and
  sums its share of every tap in float32, and one reduction adds the programs' shares.

Only a 3x3, stride-1, padding-1 convolution without bias, groups or dilation, of 16, 32 or
64 channels in and out (the sizes a tensor-core tile takes) runs here (`eligible`); the
switch is `use_conv_kernels(net)`, which changes nothing else. Without a GPU, or without
Triton, `Conv3x3` is plain `F.conv2d`, so every test runs in CI; with TRITON_INTERPRET=1
the kernels themselves run on the CPU (Triton's interpreter: slow, float32 and float16
only), which is how `tests/pytorch/test_conv_kernels.py` checks them against cuDNN's
arithmetic (`F.conv2d` and its gradients) to a stated tolerance (`check`; on a GPU
`python -m tools.conv_check`).
"""
from __future__ import annotations

import os

import torch
import torch.nn.functional as F

try:
    import triton
    import triton.language as tl
except ImportError:   # a CPU environment without Triton: F.conv2d stands in
    triton = tl = None

CHANNELS = (16, 32, 64)   # tl.dot's tiles: powers of two, at least 16
COLUMNS = 256             # taps x input channels one tl.dot multiplies (16 taps of 16 ch)
BLOCK_M = 64              # output pixels a forward program computes
WGRAD_PROGRAMS = 512      # programs that split the pixels in the weight gradient
INTERPRETED = os.environ.get("TRITON_INTERPRET") == "1"


def available() -> bool:
    """Whether the kernels can run here: Triton, and a GPU or its interpreter."""
    return triton is not None and (torch.cuda.is_available() or INTERPRETED)


def eligible(module) -> bool:
    """A Conv2d these kernels compute: 3x3, stride 1, padding 1, no bias, no groups or
    dilation, zero padding, CHANNELS in and out."""
    return (isinstance(module, torch.nn.Conv2d) and module.kernel_size == (3, 3)
            and module.stride == (1, 1) and module.padding == (1, 1)
            and module.dilation == (1, 1) and module.groups == 1 and module.bias is None
            and module.padding_mode == "zeros"
            and module.in_channels in CHANNELS and module.out_channels in CHANNELS)


def _taps(ci: int) -> tuple[int, int]:
    """(taps one tl.dot takes, groups of taps for all 9): COLUMNS // ci taps a group,
    the last group's taps past the ninth masked to zero."""
    taps = COLUMNS // ci
    return taps, -(-9 // taps)


if triton is not None:
    @triton.jit
    def _im2col(x_ptr, n, h, w, ok_rows, H, W, sxn, sxh, sxw, sxc, group,
                CI: tl.constexpr, TAPS: tl.constexpr):
        """The [rows, TAPS * CI] tile of x that one group of taps reads: column j is tap
        group * TAPS + j // CI (its shift: tap // 3 - 1 rows, tap % 3 - 1 columns) and
        channel j % CI; zeros outside the image and past the ninth tap."""
        j = tl.arange(0, TAPS * CI)
        tap = group * TAPS + j // CI
        hh = h[:, None] + (tap // 3 - 1)[None, :]
        ww = w[:, None] + (tap % 3 - 1)[None, :]
        ok = ok_rows[:, None] & (tap < 9)[None, :] & (hh >= 0) & (hh < H) & (ww >= 0) \
            & (ww < W)
        return tl.load(x_ptr + n[:, None] * sxn + hh * sxh + ww * sxw + (j % CI)[None, :] * sxc,
                       mask=ok, other=0.0)

    @triton.jit
    def _conv3x3(x_ptr, w_ptr, y_ptr, M, H, W, sxn, sxh, sxw, sxc, syn, syh, syw, syc,
                 CI: tl.constexpr, CO: tl.constexpr, BM: tl.constexpr, TAPS: tl.constexpr,
                 GROUPS: tl.constexpr):
        """BM output pixels of a 3x3, stride-1, padding-1 convolution, one tl.dot a group
        of taps; w is [9 * CI, CO] (row tap * CI + ci)."""
        m = tl.program_id(0) * BM + tl.arange(0, BM)
        inside = m < M
        n = m // (H * W)
        h = (m % (H * W)) // W
        w = m % W
        j = tl.arange(0, TAPS * CI)
        co = tl.arange(0, CO)
        acc = tl.zeros((BM, CO), dtype=tl.float32)
        for group in tl.static_range(GROUPS):
            cols = _im2col(x_ptr, n, h, w, inside, H, W, sxn, sxh, sxw, sxc, group, CI, TAPS)
            row = group * TAPS * CI + j
            taps = tl.load(w_ptr + row[:, None] * CO + co[None, :],
                           mask=(row < 9 * CI)[:, None], other=0.0)
            acc += tl.dot(cols, taps)
        tl.store(y_ptr + (n * syn + h * syh + w * syw)[:, None] + co[None, :] * syc,
                 acc.to(y_ptr.dtype.element_ty), mask=inside[:, None])

    @triton.jit
    def _wgrad3x3(x_ptr, dy_ptr, part_ptr, M, H, W, sxn, sxh, sxw, sxc, syn, syh, syw, syc,
                  BLOCKS: tl.constexpr, CI: tl.constexpr, CO: tl.constexpr, BM: tl.constexpr,
                  P: tl.constexpr, TAPS: tl.constexpr, GROUPS: tl.constexpr):
        """One group of taps' weight gradient over every P-th block of BM pixels (BLOCKS
        blocks a program): dy's rows loaded once a block, one tl.dot with the block's
        tile of x; into part[program, column, co] (float32, column tap * CI + ci)."""
        program = tl.program_id(0)
        group = tl.program_id(1)
        j = tl.arange(0, TAPS * CI)
        co = tl.arange(0, CO)
        acc = tl.zeros((CO, TAPS * CI), dtype=tl.float32)
        for block in range(BLOCKS):
            m = (program + block * P) * BM + tl.arange(0, BM)
            inside = m < M
            n = m // (H * W)
            h = (m % (H * W)) // W
            w = m % W
            cols = _im2col(x_ptr, n, h, w, inside, H, W, sxn, sxh, sxw, sxc, group, CI, TAPS)
            grads = tl.load(dy_ptr + (n * syn + h * syh + w * syw)[:, None] + co[None, :] * syc,
                            mask=inside[:, None], other=0.0)
            acc += tl.dot(tl.trans(grads), cols)
        column = group * TAPS * CI + j
        tl.store(part_ptr + (program * GROUPS * TAPS * CI + column[None, :]) * CO + co[:, None],
                 acc)


def _nhwc_strides(t: torch.Tensor) -> tuple:
    n, c, h, w = t.stride()
    return n, h, w, c


def conv3x3(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """F.conv2d(x, weight, padding=1) for a 3x3 weight [co, ci, 3, 3], by the forward
    kernel; the output keeps x's memory format."""
    n, ci, h, w = x.shape
    co = weight.shape[0]
    y = torch.empty((n, co, h, w), device=x.device, dtype=x.dtype, memory_format=_layout(x))
    rows = weight.permute(2, 3, 1, 0).reshape(9 * ci, co).contiguous()
    m = n * h * w
    taps, groups = _taps(ci)
    _conv3x3[(triton.cdiv(m, BLOCK_M),)](x, rows, y, m, h, w, *_nhwc_strides(x),
                                         *_nhwc_strides(y), CI=ci, CO=co, BM=BLOCK_M,
                                         TAPS=taps, GROUPS=groups)
    return y


def conv3x3_input_grad(dy: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    """The gradient of conv3x3's input: the forward kernel on dy, with the weight rotated
    by 180 degrees and its in and out channels swapped."""
    return conv3x3(dy, weight.flip(2, 3).transpose(0, 1))


def conv3x3_weight_grad(x: torch.Tensor, dy: torch.Tensor) -> torch.Tensor:
    """The gradient of conv3x3's weight [co, ci, 3, 3], summed in float32, in x's dtype."""
    n, ci, h, w = x.shape
    co = dy.shape[1]
    m = n * h * w
    taps, groups = _taps(ci)
    programs = max(1, min(WGRAD_PROGRAMS, triton.cdiv(m, BLOCK_M)))
    part = torch.empty((programs, groups * taps * ci, co), device=x.device, dtype=torch.float32)
    _wgrad3x3[(programs, groups)](x, dy, part, m, h, w, *_nhwc_strides(x), *_nhwc_strides(dy),
                                  BLOCKS=triton.cdiv(triton.cdiv(m, BLOCK_M), programs),
                                  CI=ci, CO=co, BM=BLOCK_M, P=programs, TAPS=taps,
                                  GROUPS=groups)
    total = part.sum(0)[:9 * ci].reshape(3, 3, ci, co)     # [kh, kw, ci, co]
    return total.permute(3, 2, 0, 1).to(x.dtype)


def _layout(x: torch.Tensor):
    return torch.channels_last if x.is_contiguous(memory_format=torch.channels_last) \
        and not x.is_contiguous() else torch.contiguous_format


# The three passes as PyTorch operators of their own (torch.library): torch.compile and a
# CUDA graph's capture see each as one opaque call, as they see cuDNN's, and autograd gets
# the forward's backward from the two gradient kernels.
@torch.library.custom_op("gpu_course::conv3x3", mutates_args=())
def conv3x3_op(x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    return conv3x3(x, weight)


@conv3x3_op.register_fake
def _(x, weight):
    n, _, h, w = x.shape
    return torch.empty((n, weight.shape[0], h, w), device=x.device, dtype=x.dtype,
                       memory_format=_layout(x))


@torch.library.custom_op("gpu_course::conv3x3_input_grad", mutates_args=())
def input_grad_op(dy: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
    return conv3x3_input_grad(dy, weight)


@input_grad_op.register_fake
def _(dy, weight):
    n, _, h, w = dy.shape
    return torch.empty((n, weight.shape[1], h, w), device=dy.device, dtype=dy.dtype,
                       memory_format=_layout(dy))


@torch.library.custom_op("gpu_course::conv3x3_weight_grad", mutates_args=())
def weight_grad_op(x: torch.Tensor, dy: torch.Tensor) -> torch.Tensor:
    return conv3x3_weight_grad(x, dy)


@weight_grad_op.register_fake
def _(x, dy):
    return torch.empty((dy.shape[1], x.shape[1], 3, 3), device=x.device, dtype=x.dtype)


def _setup(ctx, inputs, output):
    ctx.save_for_backward(*inputs)


def _backward(ctx, dy):
    x, weight = ctx.saved_tensors
    dy = dy.contiguous(memory_format=_layout(x))
    return (input_grad_op(dy, weight) if ctx.needs_input_grad[0] else None,
            weight_grad_op(x, dy) if ctx.needs_input_grad[1] else None)


conv3x3_op.register_autograd(_backward, setup_context=_setup)


class Conv3x3(torch.nn.Conv2d):
    """An eligible Conv2d whose three passes run the kernels above where they can
    (`available`, and a 4-d input); elsewhere it is the Conv2d it was. Under autocast it
    computes in autocast's type, as F.conv2d does."""

    def forward(self, x):
        if not (available() and x.dim() == 4 and (x.is_cuda or INTERPRETED)):
            return super().forward(x)
        device = x.device.type
        dtype = torch.get_autocast_dtype(device) if torch.is_autocast_enabled(device) \
            else x.dtype
        with torch.autocast(device, enabled=False):
            return conv3x3_op(x.to(dtype), self.weight.to(dtype))


def use_conv_kernels(net: torch.nn.Module, channels=(16,)) -> int:
    """The kernel rung's switch: every eligible Conv2d of `net` with `channels` in and out
    (default: ResNet-20's first stage, the one furthest from its bound) becomes a Conv3x3,
    in place, its weight kept. Returns how many changed."""
    unknown = set(channels) - set(CHANNELS)
    if unknown:
        raise ValueError(f"channels={tuple(channels)!r}: {sorted(unknown)} not allowed; "
                         f"allowed: {', '.join(map(str, CHANNELS))}")
    changed = 0
    for module in net.modules():
        if eligible(module) and module.in_channels in channels \
                and module.out_channels in channels and type(module) is torch.nn.Conv2d:
            module.__class__ = Conv3x3
            changed += 1
    return changed


# what each type's result may differ from F.conv2d's by, as max |difference| / max |F.conv2d|:
# the kernels sum in float32 as cuDNN does, in another order; 16-bit results round once.
# On a GPU tl.dot multiplies float32 in TF32 (10 bits, as cuDNN's float32 convolutions
# there): float16's tolerance then
TOLERANCE = {torch.float32: 1e-5, torch.float16: 2e-3, torch.bfloat16: 1.6e-2}


def tolerance(dtype: torch.dtype, device: torch.device) -> float:
    return TOLERANCE[torch.float16 if dtype == torch.float32 and device.type == "cuda"
                     else dtype]
CHECK_SHAPES = ((2, 16, 16, 8), (3, 16, 32, 5), (2, 32, 16, 6), (1, 64, 64, 4))


def check(device: torch.device, dtype: torch.dtype, shapes=CHECK_SHAPES) -> list[dict]:
    """Each pass of the kernels against F.conv2d and its gradients (computed in float32)
    on random data of each (batch, in, out, side), channels last: the relative error
    and whether it is within TOLERANCE[dtype]."""
    from torch.nn.grad import conv2d_input, conv2d_weight
    generator = torch.Generator().manual_seed(0)
    rows = []
    for n, ci, co, side in shapes:
        x, dy = (torch.randn(n, c, side, side, generator=generator).to(device, dtype)
                 .to(memory_format=torch.channels_last) for c in (ci, co))
        w = torch.randn(co, ci, 3, 3, generator=generator).to(device, dtype)
        f32 = [t.float() for t in (x, w, dy)]
        for name, mine, ref in (
                ("fprop", lambda: conv3x3(x, w), lambda: F.conv2d(f32[0], f32[1], padding=1)),
                ("dgrad", lambda: conv3x3_input_grad(dy, w),
                 lambda: conv2d_input(x.shape, f32[1], f32[2], padding=1)),
                ("wgrad", lambda: conv3x3_weight_grad(x, dy),
                 lambda: conv2d_weight(f32[0], w.shape, f32[2], padding=1))):
            got, want = mine(), ref()
            error = ((got.float() - want).abs().max() / want.abs().max()).item()
            rows.append({"shape": (n, ci, co, side), "pass": name, "dtype": dtype,
                         "error": error, "tolerance": tolerance(dtype, device),
                         "ok": got.shape == want.shape and got.dtype == dtype
                         and error <= tolerance(dtype, device)})
    return rows
