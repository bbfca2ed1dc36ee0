"""Progress bars that leave nothing behind in a saved notebook: closing one replaces its
output, so no "Error displaying widget" shows when the notebook is reopened."""
from __future__ import annotations

import functools


def bar(total: int | None, desc: str = "", unit: str = "it", mininterval: float = 0.5):
    """A progress bar that disappears when closed; None without tqdm."""
    try:
        from tqdm.auto import tqdm
        from tqdm.notebook import tqdm as notebook_tqdm
    except ImportError:  # the bar is a comfort, not a requirement
        return None
    options = dict(total=total, desc=desc, unit=unit, leave=False, mininterval=mininterval)
    return (_notebook_bar_class() if issubclass(tqdm, notebook_tqdm) else tqdm)(**options)


@functools.lru_cache(maxsize=None)
def _notebook_bar_class():
    from IPython.display import display
    from tqdm.notebook import tqdm as notebook_tqdm

    class NotebookBar(notebook_tqdm):
        """tqdm's widget bar, shown under a display id and replaced by text on close."""

        def __init__(self, *args, **kwargs):
            super().__init__(*args, display=False, **kwargs)
            self._handle = None
            if not self.disable:
                self._handle = display(self.container, display_id=True)
                self.displayed = True

        def close(self):
            handle, self._handle = getattr(self, "_handle", None), None
            if handle is not None:  # first the output: then no view refers to the model
                handle.update({"text/plain": ""}, raw=True)
            super().close()
            container = getattr(self, "container", None)
            if container is not None and handle is not None:
                container.close()  # also a bar stopped early (tqdm keeps those open)

    return NotebookBar
