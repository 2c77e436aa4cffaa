"""The t and normal distributions the statistics need, from scipy.special. scipy is imported at the first figure,
not with Maximus: it is most of a command's start (``maximus --help``, ``maximus runs``), and most commands
compute no interval at all. scipy.special, not scipy.stats: the same quantiles, without the 1.8 s more that
importing scipy.stats costs."""

from __future__ import annotations

import functools
from types import ModuleType


@functools.cache
def _special() -> ModuleType:
    import scipy.special

    return scipy.special


def t_quantile(df: float, p: float) -> float:
    """The p-quantile of Student's t with ``df`` degrees of freedom."""
    return float(_special().stdtrit(df, p))


def t_cdf(df: float, x: float) -> float:
    """P(T <= x) for Student's t with ``df`` degrees of freedom."""
    return float(_special().stdtr(df, x))


def normal_quantile(p: float) -> float:
    """The p-quantile of the standard normal distribution."""
    return float(_special().ndtri(p))
