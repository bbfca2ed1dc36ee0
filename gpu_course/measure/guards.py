"""What stops a run early with a true status: a loss that is no longer a number, and
SIGTERM (what `timeout`, Slurm and SageMaker send) handled like Ctrl-C.

    with sigterm_as_interrupt():      # SIGTERM asks the loop to stop
        ...
        check_stop()                  # at a step boundary: raises Terminated if asked
    check_loss(loss, epoch, cfg)      # raises Diverged naming the likely field
"""
from __future__ import annotations

import contextlib
import math
import os
import signal
import threading


class OutOfMemory(RuntimeError):
    """A batch did not fit in device memory. Adapters raise this with the batch size and
    the memory asked for and available; sweeps catch it, mark the point and go on."""


class RunStopped(RuntimeError):
    """A fault that ends a run with a message saying why (no traceback needed)."""


class Diverged(RunStopped):
    """The training loss became NaN or infinite: the run cannot recover."""


class LoaderWorkerDied(RunStopped):
    """A DataLoader worker process died while the training loop waited for its batch."""


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived: stop like Ctrl-C (finished epochs kept, status interrupted)."""


def check_loss(loss, epoch: int, cfg) -> None:
    """Raise Diverged when an epoch's mean loss is not a finite number."""
    if loss is None or math.isfinite(loss):
        return
    raise Diverged(f"the training loss became {loss} in epoch {epoch}: the run diverged. "
                   f"The likely cause is {_likely_cause(cfg)}")


def _likely_cause(cfg) -> str:
    if cfg.wd >= 0.01:  # a weight decay this large pulls weights apart on its own
        return f"wd={cfg.wd!r}; try a value 10x smaller"
    return (f"lr={cfg.lr!r} (used: {cfg.scaled_lr:g}); try a value 10x smaller or a "
            "warm-up (warmup_epochs)")


GREW = 10.0  # a final loss this many times the first epoch's: the run is coming apart


def not_learning(losses: list, cfg) -> str | None:
    """What a finished run's epoch losses say when it learned nothing, else None: a
    loss that ended far above where it began (finite, so no Diverged) or that did not
    fall at all. Needs two epochs with a loss (one epoch has nothing to compare)."""
    losses = [v for v in losses if v is not None and math.isfinite(v)]
    if len(losses) < 2:
        return None
    first, last = losses[0], losses[-1]
    if last > GREW * max(first, 1e-12):
        return (f"the training loss grew from {first:.4g} (epoch 0) to {last:.4g} (last "
                f"epoch): the run learned nothing and is close to diverging. The likely "
                f"cause is {_likely_cause(cfg)}")
    if last >= first:
        return (f"the training loss did not fall ({first:.4g} in epoch 0, {last:.4g} in "
                "the last epoch): the run learned nothing measurable")
    return None


_asked: list = []  # the signals that asked the loop to stop and that it has not obeyed yet


def _on_sigterm(signum, frame) -> None:
    """SIGTERM only asks: raising here would land wherever the signal does, also in an
    NDArray's __del__ or a fork hook, where Python prints the exception and goes on (the
    job kept training). A second SIGTERM stops at once."""
    if _asked:
        raise Terminated("stopped by SIGTERM (sent twice)")
    _asked.append("SIGTERM")


def check_stop() -> None:
    """At a step boundary: raise Terminated if SIGTERM arrived since the last check."""
    if _asked:
        _asked.clear()
        raise Terminated("stopped by SIGTERM")


def stop_asked() -> bool:
    return bool(_asked)


@contextlib.contextmanager
def sigterm_as_interrupt():
    """Inside, SIGTERM asks the loop to stop: `check_stop()`, called at each step
    boundary, raises `Terminated` there, so the run ends as on Ctrl-C. Processes forked
    inside (loader workers) start with the default action again. Off the main thread
    (signals go to the main thread only) it does nothing."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, _on_sigterm)
    _asked.clear()
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)
        _asked.clear()


def _default_in_child() -> None:
    """A forked child (a loader worker) does not inherit the stop request: SIGTERM ends
    it, as it would any worker (the request would never be read there)."""
    _asked.clear()
    try:
        if signal.getsignal(signal.SIGTERM) is _on_sigterm:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
    except ValueError:  # not this interpreter's main thread: nothing was installed here
        pass


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_default_in_child)


# errno -> what it means for a run that writes its record as it goes
DISK_ERRORS = {28: "disk full", 30: "read-only file system", 13: "permission denied",
               122: "disk quota exceeded", 20: "not a directory", 21: "is a directory",
               27: "file too large (the file size limit, ulimit -f)"}


def naming(err: BaseException, path) -> BaseException:
    """`err`, with `path` as its file name when it is an OSError that names none (a
    failed write() on an open file): "disk full" needs a where."""
    if isinstance(err, OSError) and not err.filename:
        named = OSError(err.errno, err.strerror or str(err), str(path))
        named.__cause__ = err
        return named
    return err


def status_of(exc: BaseException, epochs_done: int) -> tuple[str, str]:
    """(status, error) for a run that ended with `exc`."""
    if isinstance(exc, KeyboardInterrupt):
        how = str(exc) or "interrupted by the user (KeyboardInterrupt)"
        return "interrupted", f"{how} after {epochs_done} finished epoch(s)"
    if isinstance(exc, OutOfMemory):
        return "oom", str(exc)
    if isinstance(exc, Diverged):
        return "diverged", str(exc)
    if isinstance(exc, OSError) and exc.errno in DISK_ERRORS:
        return "failed", (f"{DISK_ERRORS[exc.errno]} while writing {exc.filename or 'a file'} "
                          f"after {epochs_done} finished epoch(s) ({exc.strerror})")
    return "failed", f"{type(exc).__name__}: {exc}"
