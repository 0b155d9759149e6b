"""The one table: every function np2torch serves, described once.

Each :class:`Function` row holds what is *true of the function* -- its rule
code, the original's qualified name, the torch operation that computes it, the
loops torch reproduces exactly, and the input range that raises no
floating-point flag (for ``np2torch bench`` and ``np2torch tune``).  Derived
from it, never written again:

* the runtime's helpers and exports (:mod:`._ufunc` builds one helper per
  elementwise row; ``__all__`` lists them),
* the rule table of the linter (:mod:`np2torch.rules` reads this file *by path*,
  without importing the runtime package, so the linter never imports NumPy),
* ``np2torch bench``'s and ``np2torch tune``'s inputs and naive torch calls.

How fast each path is on a machine is *not* a fact of the function: it lives
in the machine profile (:mod:`._profile`), measured by ``np2torch tune``.

This module imports nothing but the standard library.  Adding a function: a
row here, its fixtures, nothing else (CONTRIBUTING.md).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

ELEMENTWISE = "elementwise"
REDUCTION = "reduction"

_REAL_AND_COMPLEX = {"float16": "float16", "float32": "float32", "float64": "float64", "complex64": "complex64", "complex128": "complex128"}


@dataclass(frozen=True)
class Function:
    code: str
    """The linter's finding code, e.g. ``NPT001``."""
    qualname: str
    """The original's fully qualified name, e.g. ``scipy.special.erf``; its last part names the helper."""
    torch_op: str
    """``torch.<torch_op>`` computes it (or a composition :mod:`._ufunc` defines, e.g. ``erfinv_unsigned_zero``)."""
    loops: Mapping[str, str]
    """The original's loop dtype -> the torch dtype computed in, for the loops verified exact on the CPU."""
    cuda_loops: Mapping[str, str] = field(default_factory=dict)
    """The same for CUDA (a subset; loops not listed never run on CUDA)."""
    domain: tuple[float, float] = (-5.0, 5.0)
    """An input range raising no floating-point flag: what bench and tune time."""
    kind: str = ELEMENTWISE
    numexpr: str | None = None
    """numexpr's name for it, where numexpr has it (bench's numexpr column)."""
    naive: str | None = None
    """The plain torch function a user would call (bench's naive column), when not ``torch_op``."""
    bench_kwargs: Mapping[str, object] = field(default_factory=dict)
    """Keywords bench and tune pass to both the original and the helper (``axis=0``)."""
    note: str = ""
    """Why the loops are what they are (measured facts; docs/catalogue.md)."""

    @property
    def name(self) -> str:
        """The helper's name: the original's short name."""
        return self.qualname.rpartition(".")[2]

    @property
    def module(self) -> str:
        """The module holding the original (``numpy``, ``scipy.special``)."""
        return self.qualname.rpartition(".")[0]


FUNCTIONS: tuple[Function, ...] = (
    Function(
        code="NPT001",
        qualname="numpy.exp",
        torch_op="exp",
        loops=_REAL_AND_COMPLEX,
        cuda_loops={"float32": "float32", "float64": "float64"},
        numexpr="exp",
    ),
    Function(
        code="NPT002",
        qualname="numpy.log",
        torch_op="log",
        loops=_REAL_AND_COMPLEX,
        cuda_loops={"float32": "float32", "float64": "float64"},
        domain=(0.1, 10.0),
        numexpr="log",
    ),
    Function(
        code="NPT003",
        qualname="scipy.special.erf",
        torch_op="erf",
        loops={"float32": "float64", "float64": "float64"},
        cuda_loops={"float32": "float64", "float64": "float64"},
        domain=(-3.0, 3.0),
        note="SciPy's float32 loop computes in double and rounds once: so does torch (bitwise identical). "
        "Complex erf has no torch kernel.",
    ),
    Function(
        code="NPT004",
        qualname="scipy.special.logsumexp",
        torch_op="logsumexp",
        loops={"float32": "float32", "float64": "float64"},
        cuda_loops={"float32": "float32", "float64": "float64"},
        kind=REDUCTION,
        bench_kwargs={"axis": 0},
        note="A reduction with its own implementation (_logsumexp.py); integer and bool inputs are computed in float64.",
    ),
    Function(
        code="NPT005",
        qualname="numpy.sin",
        torch_op="sin",
        loops={"float64": "float64"},
        domain=(-10.0, 10.0),
        numexpr="sin",
        note="float64 only: float32 np.sin raises underflow for tiny *normal* inputs, which the "
        "recompute-the-suspects error check would not reproduce. Complex: not measured.",
    ),
    Function(
        code="NPT006",
        qualname="numpy.cos",
        torch_op="cos",
        loops={"float64": "float64"},
        domain=(-10.0, 10.0),
        numexpr="cos",
        note="As sin.",
    ),
    Function(
        code="NPT101",
        qualname="scipy.special.erfinv",
        torch_op="erfinv_unsigned_zero",
        loops={"float32": "float64", "float64": "float64"},
        domain=(-0.99, 0.99),
        naive="erfinv",
        note="float32 computed in float64 and rounded once: within 3 ULP of SciPy's float32 loop and "
        "correctly rounded on the catalogue's sample. SciPy's erfinv(-0.0) is +0.0: the composition adds +0.0.",
    ),
)

FUNCTIONS_BY_NAME: Mapping[str, Function] = {row.name: row for row in FUNCTIONS}
ELEMENTWISE_FUNCTIONS: tuple[Function, ...] = tuple(row for row in FUNCTIONS if row.kind == ELEMENTWISE)
