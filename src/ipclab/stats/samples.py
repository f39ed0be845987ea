"""What every statistic takes: a sample of per-run values (one value per run, never per
request; docs/statistics.md, section 1), its non-finite values left out."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

ArrayLike = Sequence[float] | np.ndarray | pd.Series


def _clean(x: ArrayLike) -> np.ndarray:
    a = np.asarray(x, dtype=float)
    return a[np.isfinite(a)]
