"""Progress bars: a widget in a notebook, text in a terminal, and text in a notebook that `rxlab report`
runs (RXLAB_PROGRESS=text), where the kernel's stderr is copied to the user's terminal as it comes: a
widget there would reach nobody."""
from __future__ import annotations

import os

from tqdm.auto import tqdm as _auto
from tqdm.std import tqdm as _text

PROGRESS_ENV = "RXLAB_PROGRESS"


def tqdm(*args, **kw):
    """tqdm.auto's bar, or tqdm's text bar on stderr when $RXLAB_PROGRESS is "text" (read at each call)."""
    bar = _text if os.environ.get(PROGRESS_ENV) == "text" else _auto
    return bar(*args, **kw)
