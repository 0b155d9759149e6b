"""The original function of a row, found so that a patch in force when it is looked up cannot outlive it.

The helpers take their originals on first use, and a first use may come inside
``mock.patch.object(np, "exp", spy)`` (or ``monkeypatch.setattr``): what
``numpy.exp`` holds then is the spy, and a helper that kept it would call it
for the rest of the process.  So an object is taken as the original only when
it is of the row's kind -- a NumPy ufunc for an elementwise or binary row, a
function defined in the row's package for a reduction (a ``Mock``, a lambda,
the program's own function are neither) -- and while the module's attribute is
not, the original is the one another module of the package holds under the
same name (``numpy._core.umath.exp``, ``scipy.special._logsumexp.logsumexp``),
which a patch of the public name leaves alone.
"""

from __future__ import annotations

import inspect
import sys
import types
from typing import TYPE_CHECKING, Callable

import numpy as np

from ..table import BINARY, ELEMENTWISE, Function

if TYPE_CHECKING:
    from typing import TypeGuard  # Python 3.10


def find(row: Function, module: types.ModuleType) -> Callable[..., object] | None:
    """``row``'s original: ``module``'s attribute (``module`` is ``row.module``), or while that is not the
    original (a patch) the one another module of its package holds; None when neither is."""
    found: object = getattr(module, row.name)
    if _is_original(found, row):
        return found
    package = row.module.split(".")[0] + "."
    for name in sorted(name for name in list(sys.modules) if name.startswith(package) and name != row.module):
        candidate: object = getattr(sys.modules.get(name), "__dict__", {}).get(row.name)
        if candidate is not None and candidate is not found and _is_original(candidate, row):
            return candidate
    return None


def _is_original(candidate: object, row: Function) -> TypeGuard[Callable[..., object]]:
    if row.kind in (ELEMENTWISE, BINARY):
        return isinstance(candidate, np.ufunc)
    if not inspect.isfunction(candidate):
        return False
    home = candidate.__module__ or ""
    package = row.module.split(".")[0]
    return ((home == package or home.startswith(package + "."))
            and getattr(sys.modules.get(home), candidate.__name__, None) is candidate)
