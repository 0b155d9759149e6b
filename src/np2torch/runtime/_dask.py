"""Dask arrays: the helpers build the graph the original builds, with np2torch computing each block.

``np.exp(dask_array)`` is Dask's ``elemwise(np.exp, ...)`` (``Array.__array_ufunc__``):
:func:`elementwise` builds the same graph with the helper as the per-block
function, so dtype, shape, chunks, meta, ``out=``/``where=``/``dtype=`` and the
errors are Dask's own, and each worker picks its path from its own machine
profile.  A reduction builds its own graph from :class:`BlockCall`
(``logsumexp``: :mod:`._logsumexp_dask`).

Settings: a device or ``min_size`` given explicitly (:func:`configure`,
:func:`using`) where the graph is built travels with it to the workers; left at
the environment's values, each worker reads its own environment and profile.

Dask is optional: nothing here imports it until a Dask array is seen (the
callers test ``sys.modules`` first, as array-api-compat does).
"""

from __future__ import annotations

import os
import sys
from typing import Any, Callable, Optional, Tuple

import numpy as np

from ._config import RuntimeSettings, settings_from_env
from ._state import PROCESS, SCOPED

DASK_ARRAY = "dask.array"
"""The module whose presence in ``sys.modules`` the helpers test before :func:`is_dask_array`."""

Settings = Tuple[str, Optional[int], str]
"""The settings a graph carries to its workers: ``(device, min_size, exact)``."""

_UFUNC_KEYWORDS = frozenset(("out", "where", "dtype"))
"""What Dask's ``elemwise`` takes; it rejects the rest, as the original on a Dask array does."""



def is_dask_array(x: object) -> bool:
    """Whether ``x`` is a ``dask.array.Array`` (never imports Dask)."""
    module = sys.modules.get(DASK_ARRAY)
    return module is not None and isinstance(x, module.Array)


class BlockCall:
    """``function(*blocks, **kwargs)`` on a worker, under the settings given explicitly where the graph was built.

    ``settings``: ``(device, min_size, exact)``, or None for the worker's own
    settings and machine profile.  Pickled by reference to ``function``.
    """

    def __init__(self, function: Callable[..., object], settings: Settings | None) -> None:
        self.function = function
        self.settings = settings
        self.__name__ = function.__name__  # Dask names the graph's keys after it

    def __call__(self, *args: object, **kwargs: object) -> object:
        if self.settings is None:
            return self.function(*args, **kwargs)
        token = SCOPED.set(RuntimeSettings(*self.settings))
        try:
            return self.function(*args, **kwargs)
        finally:
            SCOPED.reset(token)

    def __reduce__(self) -> tuple[type[BlockCall], tuple[Callable[..., object], Settings | None]]:
        return (BlockCall, (self.function, self.settings))

    def __dask_tokenize__(self) -> tuple[str, str, str, Settings | None]:
        return ("np2torch", self.function.__module__, self.function.__qualname__, self.settings)


def explicit_settings() -> Settings | None:
    """The settings to send with a graph: those of a :func:`using` block or :func:`configure`, else None."""
    scoped = SCOPED.get()
    settings = PROCESS.settings if scoped is None else scoped
    if scoped is None and settings == _environment_settings():
        return None  # the environment's: each worker reads its own
    return settings.device, settings.min_size, settings.exact


def _environment_settings() -> RuntimeSettings | None:
    try:
        return settings_from_env(os.environ)
    except ValueError:
        return None


# ---------------------------------------------------------------- elementwise helpers


def elementwise(helper: Callable[..., Any], original: Any, x: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``helper(x, *args, **kwargs)`` for a Dask array ``x``: the graph ``original`` builds, blocks computed by ``helper``.

    Mirrors ``dask.array.Array.__array_ufunc__`` for a one-input ufunc:
    ``elemwise(ufunc, x, out=, where=, dtype=)``.  Anything else (another
    keyword, two outputs, an ``out`` that is not a Dask array, another Array
    type) is the original's call, with its result or error.
    """
    from dask.array.core import Array, elemwise

    call = dict(kwargs)
    if args:
        if len(args) != 1 or "out" in kwargs:
            return original(x, *args, **kwargs)
        call["out"] = args[0]
    out = call.get("out")
    if type(out) is tuple and len(out) == 1:
        out = out[0]
    if (
        type(x) is not Array
        or not isinstance(original, np.ufunc)
        or (original.nin, original.nout) != (1, 1)
        or not _UFUNC_KEYWORDS.issuperset(call)
        or not (out is None or type(out) is Array)
    ):
        return original(x, *args, **kwargs)
    result = elemwise(BlockCall(helper, explicit_settings()), x, **call)
    if result is NotImplemented:  # Dask could not infer the dtype: the original raises NumPy's error
        return original(x, *args, **kwargs)
    return result
