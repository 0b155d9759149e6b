"""Lazy results on Dask arrays, where the original computes one (import ``np2torch.runtime.dask``).

``np2t.logsumexp(dask_array)`` returns what ``scipy.special.logsumexp``
returns for it: SciPy 1.17 (without ``SCIPY_ARRAY_API=1``) computes the result,
an ``ndarray``, so the helper computes its tree reduction (the work done where
the chunks lie) and returns the ``ndarray`` too; a fix never changes a
program's types.  Code that wants the reduction to stay lazy -- to combine it
with more of the graph before computing -- asks for it here::

    from np2torch.runtime.dask import logsumexp
    z = logsumexp(x, axis=1)          # a lazy dask.array.Array (a pair with return_sign=True)

Dask is imported only when a Dask array is given (docs/scaling.md).
"""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["logsumexp"]


def logsumexp(a: Any, axis: int | tuple[int, ...] | None = None, b: Any = None, keepdims: bool = False,
              return_sign: bool = False) -> Any:
    """``scipy.special.logsumexp`` of a Dask array as a lazy Dask array (a pair with ``return_sign``).

    The values are those ``np2t.logsumexp`` computes.  Anything but a Dask
    array is ``np2t.logsumexp``'s call, with its result.
    """
    from ._dask import DASK_ARRAY, is_dask_array
    from ._logsumexp import dask_logsumexp
    from ._logsumexp import logsumexp as helper

    if DASK_ARRAY in sys.modules and is_dask_array(a):
        return dask_logsumexp(a, axis, b, keepdims, return_sign)
    return helper(a, axis, b, keepdims, return_sign)
