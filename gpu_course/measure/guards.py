"""What stops a run early with a true status: a loss that is no longer a number, and
Ctrl-C or SIGTERM (`timeout`, Slurm, SageMaker), which ask the loop to stop at a step boundary."""
from __future__ import annotations

import contextlib
import math
import os
import signal
import threading


class OutOfMemory(RuntimeError):
    """A batch did not fit in device memory; sweeps catch it, mark the point and go on."""


class RunStopped(RuntimeError):
    """A fault that ends a run with a message saying why (no traceback needed)."""


class Diverged(RunStopped):
    """The training loss became NaN or infinite: the run cannot recover."""


class LoaderWorkerDied(RunStopped):
    """A DataLoader worker process died while the training loop waited for its batch."""


WORKER_DIED_HINT = "often the kernel's out-of-memory killer (see `dmesg`): try fewer num_workers"


class Terminated(KeyboardInterrupt):
    """SIGTERM arrived: stop like Ctrl-C (finished epochs kept, status interrupted)."""


def check_loss(loss, epoch: int, cfg) -> None:
    """Raise Diverged when an epoch's mean loss is not a finite number."""
    if loss is not None and not math.isfinite(loss):
        raise Diverged(f"the training loss became {loss} in epoch {epoch}: the run diverged; "
                       f"{_likely_cause(cfg)}")


def _likely_cause(cfg) -> str:
    if cfg.wd >= 0.01:  # a weight decay this large pulls weights apart on its own
        return f"try wd={cfg.wd!r} 10x smaller"
    return f"try lr={cfg.lr!r} (used: {cfg.scaled_lr:g}) 10x smaller, or warmup_epochs"


GREW = 10.0  # a final loss this many times the first epoch's: the run is coming apart


def not_learning(losses: list, cfg) -> str | None:
    """What a finished run's epoch losses say when they rose or never fell, else None."""
    losses = [v for v in losses if v is not None and math.isfinite(v)]
    if len(losses) < 2:
        return None
    first, last = losses[0], losses[-1]
    if last > GREW * max(first, 1e-12):
        return (f"the training loss grew from {first:.4g} to {last:.4g}: the run learned nothing; "
                f"{_likely_cause(cfg)}")
    if last >= first:
        return f"the training loss did not fall ({first:.4g} to {last:.4g}): the run learned nothing"
    return None


_asked: list = []  # the signals that asked the loop to stop and that it has not obeyed yet


def _stop(signum: int, twice: bool = False) -> KeyboardInterrupt:
    """What a stop request raises: KeyboardInterrupt for Ctrl-C, Terminated for SIGTERM."""
    if signum == signal.SIGINT:
        return KeyboardInterrupt("interrupted by the user (Ctrl-C" + (" twice)" if twice else ")"))
    return Terminated("stopped by SIGTERM" + (" (sent twice)" if twice else ""))


def _on_signal(signum, frame) -> None:
    """Ctrl-C and SIGTERM only ask (raised here they could be lost in a __del__); a second raises."""
    if _asked:
        raise _stop(signum, twice=True)
    _asked.append(signum)


def check_stop() -> None:
    """At a step boundary: raise the stop request that arrived since the last check."""
    stop = pending_stop()
    if stop is not None:
        raise stop


def pending_stop() -> KeyboardInterrupt | None:
    """What the stop request since the last check raises (it is then obeyed), or None."""
    signum = _asked.pop(0) if _asked else None
    _asked.clear()
    return None if signum is None else _stop(signum)


@contextlib.contextmanager
def stop_requests():
    """Inside, Ctrl-C and SIGTERM make the next `check_stop()` raise (a late one on
    leaving); forked workers leave Ctrl-C to this process and die of SIGTERM. Main thread
    only, and not nested."""
    if threading.current_thread() is not threading.main_thread() \
            or signal.getsignal(signal.SIGINT) is _on_signal:
        yield
        return
    previous = {signum: signal.signal(signum, _on_signal) for signum in (signal.SIGINT, signal.SIGTERM)}
    _asked.clear()
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
        late = pending_stop()
    if late is not None:  # leaving without an exception, a request not yet obeyed
        raise late


def _in_child() -> None:
    """A forked child (a loader worker) leaves Ctrl-C to its parent and ends on SIGTERM."""
    _asked.clear()
    try:
        for signum, handler in ((signal.SIGINT, signal.SIG_IGN), (signal.SIGTERM, signal.SIG_DFL)):
            if signal.getsignal(signum) is _on_signal:
                signal.signal(signum, handler)
    except ValueError:  # not this interpreter's main thread: nothing was installed here
        pass


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_in_child)


# errno -> what it means for a run that writes its record as it goes
DISK_ERRORS = {28: "disk full", 30: "read-only file system", 13: "permission denied",
               122: "disk quota exceeded", 20: "not a directory", 21: "is a directory",
               27: "file too large (the file size limit, ulimit -f)"}


def naming(err: BaseException, path) -> BaseException:
    """`err`, with `path` as its file name when it is an OSError that names none."""
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
    if isinstance(exc, (OutOfMemory, Diverged)):
        return "oom" if isinstance(exc, OutOfMemory) else "diverged", str(exc)
    if isinstance(exc, OSError) and exc.errno in DISK_ERRORS:
        what = exc.filename or "a file"
        return "failed", (f"{DISK_ERRORS[exc.errno]} while writing {what} after {epochs_done} finished epoch(s) "
                          f"({exc.strerror})")
    return "failed", f"{type(exc).__name__}: {exc}"
