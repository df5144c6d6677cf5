"""Where the checkout is: the repository that holds data/, figures/ and notebooks/ beside the package."""
from __future__ import annotations

from pathlib import Path

# rxlab/core/paths.py -> the repository (an editable install runs from the checkout)
REPO = Path(__file__).resolve().parents[2]
