"""The one table: every function np2torch serves, described once.

Each :class:`Function` row holds what is *true of the function* -- its rule
code, the original's qualified name, the torch operation that computes it, the
loops torch reproduces exactly, and the input range that raises no
floating-point flag (for ``np2torch bench`` and ``np2torch tune``).  Derived
from it, never written again:

* the runtime's helpers and exports (each row's ``implementation`` module makes
  its helper: :mod:`._ufunc` for every elementwise row; ``__all__`` lists them),
  ``which()``, the runtime's type stub and the Dask graphs,
* the rule table of the linter and its pages (:mod:`np2torch.lint.rules`
  imports this module: importing the runtime package loads only this, its
  settings and its state, so the linter never imports NumPy),
* ``np2torch bench``'s and ``np2torch tune``'s inputs and naive torch calls.

How fast each path is on a machine is *not* a fact of the function: it lives
in the machine profile (:mod:`._decision.profile`), measured by ``np2torch tune``.

This module imports nothing but the standard library.  Adding an elementwise
function: a row here and its fixtures, nothing else; a reduction: also the
module that computes it, which its row names (CONTRIBUTING.md).
"""

from __future__ import annotations

from typing import Mapping

ELEMENTWISE = "elementwise"
REDUCTION = "reduction"
BINARY = "binary"
"""A two-argument elementwise function (a ufunc with two inputs): runtime/_binary.py makes its helper."""

_INF = float("inf")

_REAL_AND_COMPLEX = {"float16": "float16", "float32": "float32", "float64": "float64", "complex64": "complex64", "complex128": "complex128"}


class Function:
    """One function np2torch serves (a plain class: ``@dataclass`` costs ~2 ms at import).

    ``code``: the linter's finding code (``NPT001``); ``qualname``: the
    original's fully qualified name (``scipy.special.erf``), whose last part
    names the helper; ``torch_op``: ``torch.<torch_op>`` computes it (dotted for
    ``torch.special.*``, or a composition :mod:`._ufunc` defines, e.g.
    ``erfinv_unsigned_zero``); ``loops``: the original's loop dtype -> the torch
    dtype computed in, for the loops verified exact on the CPU; ``cuda_loops``:
    the same for CUDA (a subset); ``domain``: an input range raising no
    floating-point flag (what bench and tune time); ``quiet``: for an elementwise
    row, the open interval of float64 inputs on which the original raises none of
    the divide, overflow and invalid flags (underflow it may; far from the bounds
    where IEEE results overflow or leave the function's domain, so that no correct
    implementation raises them, and checked where the suite runs): there
    the helper hands a Python float or int or a ``numpy.float64`` straight to the original,
    without redirecting NumPy's warnings to the caller's line (:mod:`._ufunc`), when
    the error state does not warn on underflow; None: never; ``kind``: ``elementwise``,
    ``binary`` (a two-argument ufunc: :mod:`._binary`; ``loops`` are those of
    the pair, both inputs cast into the loop) or ``reduction``;
    ``implementation``: the runtime module that makes the helper
    (its ``make_helper(row)``): :mod:`._ufunc` for every elementwise row, its own
    module for a reduction, whose typed signature (``@overload``) is written
    there and copied into the runtime's stub; ``numexpr``: numexpr's name for
    it, if any; ``naive``: the plain torch function a user would call, when not
    ``torch_op``; ``bench_kwargs``: keywords bench and tune pass to the original
    and the helper (``axis=0``); ``note``: why the loops are what they are and
    what was measured about them (the rule page's "Known problems" opens with
    the loops and this note); ``why`` and ``known_problems``: the rule page's
    sections, where the generated ones do not fit (a reduction's); ``default``:
    whether its rule is on without ``--select`` (a new row is opt-in until its
    speed is shown on the reference machines; exactness is what admits a row at
    all).
    """

    __slots__ = ("code", "qualname", "torch_op", "loops", "cuda_loops", "domain", "quiet", "kind", "implementation", "numexpr",
                 "naive", "bench_kwargs", "note", "why", "known_problems", "default")

    def __init__(
        self,
        code: str,
        qualname: str,
        torch_op: str,
        loops: Mapping[str, str],
        cuda_loops: Mapping[str, str] | None = None,
        domain: tuple[float, float] = (-5.0, 5.0),
        quiet: tuple[float, float] | None = None,
        kind: str = ELEMENTWISE,
        implementation: str = "_ufunc",
        numexpr: str | None = None,
        naive: str | None = None,
        bench_kwargs: Mapping[str, object] | None = None,
        note: str = "",
        why: str = "",
        known_problems: str = "",
        default: bool = False,
    ) -> None:
        self.code = code
        self.qualname = qualname
        self.torch_op = torch_op
        self.loops = loops
        self.cuda_loops: Mapping[str, str] = {} if cuda_loops is None else cuda_loops
        self.domain = domain
        self.quiet = quiet
        self.kind = kind
        self.implementation = implementation
        self.numexpr = numexpr
        self.naive = naive
        self.bench_kwargs: Mapping[str, object] = {} if bench_kwargs is None else bench_kwargs
        self.note = note
        self.why = why
        self.known_problems = known_problems
        self.default = default

    def __repr__(self) -> str:
        return f"Function(code={self.code!r}, qualname={self.qualname!r})"

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
        default=True,
        qualname="numpy.exp",
        quiet=(-_INF, 709.0),
        torch_op="exp",
        loops=_REAL_AND_COMPLEX,
        cuda_loops={"float32": "float32", "float64": "float64"},
        numexpr="exp",
        note="float16: 4 of 63,488 inputs differ by 1 ULP (their exact value lies within 1e-6 ULP of a rounding tie).",
    ),
    Function(
        code="NPT002",
        default=True,
        qualname="numpy.log",
        quiet=(0.0, _INF),
        torch_op="log",
        loops=_REAL_AND_COMPLEX,
        cuda_loops={"float32": "float32", "float64": "float64"},
        domain=(0.1, 10.0),
        numexpr="log",
    ),
    Function(
        code="NPT003",
        default=True,
        qualname="scipy.special.erf",
        quiet=(-_INF, _INF),
        torch_op="erf",
        loops={"float32": "float64", "float64": "float64"},
        cuda_loops={"float32": "float64", "float64": "float64"},
        domain=(-3.0, 3.0),
        note="SciPy's float32 loop computes in double and rounds once: so does torch (bitwise identical). "
        "Complex erf has no torch kernel. `erf(..., where=mask)` is handed to SciPy unchanged, so it inherits "
        "SciPy 1.17's heap corruption there (scipy/xsf#146).",
    ),
    Function(
        code="NPT004",
        default=True,
        qualname="scipy.special.logsumexp",
        torch_op="logsumexp",
        loops={"float32": "float32", "float64": "float64"},
        cuda_loops={"float32": "float32", "float64": "float64"},
        kind=REDUCTION,
        implementation="_logsumexp",
        bench_kwargs={"axis": 0},
        note="Integer and bool inputs are computed in float64.",
        why="`scipy.special.logsumexp` makes several full passes and temporaries over its input; torch's fused "
        "reduction is several times faster on large arrays. The helper calls torch only where it reproduces SciPy's "
        "result, and SciPy itself everywhere else. Along a short contiguous axis (`logsumexp(comp, axis=1)` over a "
        "mixture's few components) it computes SciPy's own arithmetic without SciPy's overhead: SciPy's bits, "
        "several times faster, without torch.",
        known_problems="torch serves the installed SciPy when a behavioural check at first use shows that the torch "
        "path reproduces it (special values, a dominant term, layouts); otherwise, and for `b=`, NaN inputs, "
        "complex/float16 and non-ndarray inputs, SciPy itself runs (same result, no speed-up). See docs/logsumexp.md. "
        "A Dask array is reduced on its graph and the result computed, as SciPy returns it (an `ndarray`); "
        "`np2torch.runtime.dask.logsumexp` leaves it lazy (docs/scaling.md).",
    ),
    Function(
        code="NPT005",
        default=True,
        qualname="numpy.sin",
        quiet=(-_INF, _INF),
        torch_op="sin",
        loops={"float64": "float64"},
        domain=(-10.0, 10.0),
        numexpr="sin",
        note="float16 and float32 go to NumPy: its SIMD loops were as fast, and float32 `np.sin` raises underflow for "
        "tiny *normal* inputs, which the recompute-the-suspects error check would not reproduce; complex: not "
        "measured. float64 results differ from NumPy's by at most 1 ULP (90 of 100,032 sampled inputs, arguments up "
        "to 1e22 included); torch was as close to the exact value as NumPy.",
    ),
    Function(
        code="NPT006",
        default=True,
        qualname="numpy.cos",
        quiet=(-_INF, _INF),
        torch_op="cos",
        loops={"float64": "float64"},
        domain=(-10.0, 10.0),
        numexpr="cos",
        note="float16 and float32 go to NumPy, as for sin (float32 `np.cos` raises underflow for tiny normal "
        "inputs); complex: not measured. float64 results differ from NumPy's by at most 1 ULP (102 of 100,032 "
        "sampled inputs, arguments up to 1e22 included); torch was as close to the exact value as NumPy.",
    ),
    Function(
        code="NPT101",
        default=True,
        qualname="scipy.special.erfinv",
        quiet=(-1.0, 1.0),
        torch_op="erfinv_unsigned_zero",
        loops={"float32": "float64", "float64": "float64"},
        domain=(-0.99, 0.99),
        naive="erfinv",
        note="float32 (and float16, which SciPy computes in float32) within 3 ULP of SciPy's float32 loop, which "
        "was 1.8 ULP from the exact value on the catalogue's sample (the helper 0.5); float64 within 2 ULP of SciPy "
        "(SciPy 1.9 ULP from exact, the helper 0.5). SciPy returns +0.0 for -0.0 where torch gives -0.0: the helper "
        "adds +0.0 (one extra pass). Calls under a reporting `scipy.special.errstate` (SciPy's own error state), "
        "`where=` masks (SciPy 1.17's heap corruption, scipy/xsf#146) and complex inputs go to SciPy.",
    ),
    # --- opt-in rows: accepted by exactness alone (scripts/catalogue.py, docs/catalogue.md);
    # their rules are on only through --select until their speed is shown on the reference machines.
    Function(
        code="NPT007",
        qualname="numpy.exp2",
        quiet=(-_INF, 1023.0),
        torch_op="exp2",
        loops={"float16": "float16"},
        note="float32: NumPy's exp2 returns 0.0 where torch returns the smallest subnormal (x near -149.7); "
        "float64: torch 0.72 ULP from exact where NumPy is 0.60.",
    ),
    Function(
        code="NPT008",
        qualname="numpy.expm1",
        quiet=(-_INF, 709.0),
        torch_op="expm1",
        loops={"float16": "float16", "float32": "float32", "float64": "float64"},
        numexpr="expm1",
    ),
    Function(
        code="NPT009",
        qualname="numpy.log2",
        quiet=(0.0, _INF),
        torch_op="log2",
        loops={"float16": "float16", "float32": "float32", "float64": "float64"},
        domain=(0.1, 10.0),
        numexpr="log2",
    ),
    Function(
        code="NPT010",
        qualname="numpy.log10",
        quiet=(0.0, _INF),
        torch_op="log10",
        loops={"float16": "float16", "float32": "float32", "float64": "float64"},
        domain=(0.1, 10.0),
        numexpr="log10",
    ),
    Function(
        code="NPT011",
        qualname="numpy.log1p",
        quiet=(-1.0, _INF),
        torch_op="log1p",
        loops={"float16": "float16", "float32": "float32"},
        domain=(-0.9, 10.0),
        numexpr="log1p",
        note="float64: torch 0.62 ULP from exact where NumPy is 0.52.",
    ),
    Function(
        code="NPT012",
        qualname="numpy.sqrt",
        quiet=(0.0, _INF),
        torch_op="sqrt",
        loops={"float16": "float16", "float32": "float64"},
        domain=(0.0, 10.0),
        numexpr="sqrt",
        note="torch's float32 and float64 sqrt are not correctly rounded (0.74 / 0.52 ULP from exact); "
        "float32 computed in float64 and rounded once is (bitwise NumPy's). float64: NumPy.",
    ),
    Function(
        code="NPT013",
        qualname="numpy.tan",
        quiet=(-_INF, _INF),
        torch_op="tan",
        loops={"float16": "float16", "float32": "float32", "float64": "float64"},
        numexpr="tan",
    ),
    Function(
        code="NPT014",
        qualname="numpy.arcsin",
        quiet=(-1.0, 1.0),
        torch_op="asin",
        loops={"float16": "float16", "float32": "float32", "float64": "float64"},
        domain=(-0.99, 0.99),
        numexpr="arcsin",
    ),
    Function(
        code="NPT015",
        qualname="numpy.arccos",
        quiet=(-1.0, 1.0),
        torch_op="acos",
        loops={"float16": "float16", "float32": "float32", "float64": "float64"},
        domain=(-0.99, 0.99),
        numexpr="arccos",
    ),
    Function(
        code="NPT016",
        qualname="numpy.arctan",
        quiet=(-_INF, _INF),
        torch_op="atan",
        loops={"float16": "float16", "float32": "float32"},
        domain=(-10.0, 10.0),
        numexpr="arctan",
        note="float64: torch 0.64 ULP from exact where NumPy is 0.50.",
    ),
    Function(
        code="NPT017",
        qualname="numpy.sinh",
        quiet=(-710.0, 710.0),
        torch_op="sinh",
        loops={"float16": "float16", "float32": "float64"},
        domain=(-10.0, 10.0),
        numexpr="sinh",
        note="torch's vectorized sinh overflows early near |x| = 89 (float32) and 710 (float64) where NumPy's "
        "result is finite; float32 computed in float64 and rounded once matches. float64: NumPy.",
    ),
    Function(
        code="NPT018",
        qualname="numpy.cosh",
        quiet=(-710.0, 710.0),
        torch_op="cosh",
        loops={"float16": "float16", "float32": "float64"},
        domain=(-10.0, 10.0),
        numexpr="cosh",
        note="As sinh.",
    ),
    Function(
        code="NPT019",
        qualname="numpy.tanh",
        quiet=(-_INF, _INF),
        torch_op="tanh",
        loops={"float16": "float16", "float32": "float32", "float64": "float64"},
        domain=(-10.0, 10.0),
        numexpr="tanh",
    ),
    Function(
        code="NPT020",
        qualname="numpy.arcsinh",
        quiet=(-_INF, _INF),
        torch_op="asinh",
        loops={"float16": "float16", "float32": "float64"},
        domain=(-10.0, 10.0),
        numexpr="arcsinh",
        note="torch's own float32 and float64 asinh are ~1.2 / 1.0 ULP from exact where NumPy is ~0.5: "
        "float32 computed in float64 and rounded once; float64: NumPy.",
    ),
    Function(
        code="NPT021",
        qualname="numpy.arccosh",
        quiet=(1.0, _INF),
        torch_op="acosh",
        loops={"float16": "float16", "float32": "float64"},
        domain=(1.01, 10.0),
        numexpr="arccosh",
        note="As arcsinh (torch 1.2 ULP from exact in both widths).",
    ),
    Function(
        code="NPT022",
        qualname="numpy.arctanh",
        quiet=(-1.0, 1.0),
        torch_op="atanh",
        loops={"float16": "float16", "float32": "float32", "float64": "float64"},
        domain=(-0.99, 0.99),
        numexpr="arctanh",
    ),
    Function(
        code="NPT023",
        qualname="numpy.logaddexp",
        torch_op="logaddexp",
        loops={"float16": "float16"},
        kind=BINARY,
        implementation="_binary",
        domain=(-40.0, 40.0),
        numexpr=None,
        note="float32: 512 ULP from NumPy near a zero result (both compute x + log1p(exp(y - x)) and cancel); "
        "float32 and float64: NumPy raises `overflow` for (max, -max), where the result is finite.",
    ),
    Function(
        code="NPT024",
        qualname="numpy.hypot",
        torch_op="hypot",
        loops={"float16": "float16", "float32": "float32", "float64": "float64"},
        kind=BINARY,
        implementation="_binary",
        domain=(-10.0, 10.0),
    ),
    Function(
        code="NPT025",
        qualname="numpy.arctan2",
        torch_op="atan2",
        loops={"float16": "float16", "float32": "float32", "float64": "float64"},
        kind=BINARY,
        implementation="_binary",
        domain=(-10.0, 10.0),
        numexpr="arctan2",
    ),
    Function(
        code="NPT102",
        qualname="scipy.special.expit",
        quiet=(-_INF, _INF),
        torch_op="sigmoid",
        loops={"float32": "float32", "float64": "float64"},
        domain=(-10.0, 10.0),
    ),
    Function(
        code="NPT103",
        qualname="scipy.special.logit",
        quiet=(0.0, 1.0),
        torch_op="logit",
        loops={"float32": "float64"},
        domain=(0.01, 0.99),
        note="torch computes log(x / (1 - x)): in float64 up to 38,821 ULP from SciPy near x = 0.5, "
        "so float64 is SciPy's; float32 computed in float64 and rounded once is within 2 ULP.",
    ),
    Function(
        code="NPT104",
        qualname="scipy.special.erfc",
        quiet=(-_INF, _INF),
        torch_op="erfc",
        loops={"float32": "float64"},
        domain=(-3.0, 3.0),
        note="float32 computed in float64 and rounded once: bitwise SciPy's. float64: SciPy flushes the "
        "tail to 0.0 from x ~ 26.6 where torch returns subnormals.",
    ),
    Function(
        code="NPT105",
        qualname="scipy.special.erfcx",
        quiet=(-26.0, _INF),
        torch_op="special.erfcx",
        loops={"float32": "float64"},
        domain=(-3.0, 10.0),
        note="float32 computed in float64: bitwise SciPy's. float64: 5 ULP from SciPy for large x.",
    ),
    Function(
        code="NPT106",
        qualname="scipy.special.log_ndtr",
        quiet=(-30.0, 30.0),
        torch_op="special.log_ndtr",
        loops={"float32": "float64"},
        domain=(-10.0, 5.0),
        note="float32 computed in float64: bitwise SciPy's. float64: up to 477 ULP apart for x > 30.",
    ),
    Function(
        code="NPT107",
        qualname="scipy.special.ndtri",
        quiet=(0.0, 1.0),
        torch_op="special.ndtri",
        loops={"float32": "float64"},
        domain=(0.01, 0.99),
        note="float32 computed in float64: bitwise SciPy's. float64: torch 2.9 ULP from exact where SciPy is 2.3.",
    ),
    Function(
        code="NPT108",
        qualname="scipy.special.digamma",
        quiet=(1e-300, _INF),
        torch_op="digamma",
        loops={"float32": "float64"},
        domain=(0.1, 10.0),
        note="float32 computed in float64: bitwise SciPy's. float64: 60,126 ULP apart near the root x = 1.4616.",
    ),
    Function(
        code="NPT109",
        qualname="scipy.special.i0",
        quiet=(-700.0, 700.0),
        torch_op="i0",
        loops={"float32": "float64"},
        domain=(-10.0, 10.0),
        note="float32 computed in float64: bitwise SciPy's (torch's float32 overflows early). float64: 7 ULP apart.",
    ),
    Function(
        code="NPT110",
        qualname="scipy.special.i0e",
        quiet=(-_INF, _INF),
        torch_op="special.i0e",
        loops={"float32": "float64"},
        domain=(-10.0, 10.0),
        note="float32 computed in float64: bitwise SciPy's. float64: 7 ULP apart.",
    ),
    Function(
        code="NPT111",
        qualname="scipy.special.i1",
        quiet=(-700.0, 700.0),
        torch_op="special.i1",
        loops={"float32": "float64"},
        domain=(-10.0, 10.0),
        note="float32 computed in float64: bitwise SciPy's. float64: 13 ULP apart.",
    ),
    Function(
        code="NPT112",
        qualname="scipy.special.i1e",
        quiet=(-_INF, _INF),
        torch_op="special.i1e",
        loops={"float32": "float64"},
        domain=(-10.0, 10.0),
        note="float32 computed in float64: bitwise SciPy's. float64: 8 ULP apart.",
    ),
    Function(
        code="NPT113",
        qualname="scipy.special.xlogy",
        torch_op="xlogy",
        loops={"float32": "float32", "float64": "float64"},
        kind=BINARY,
        implementation="_binary",
        domain=(0.1, 10.0),
        note="Bitwise SciPy's on every pair measured (`xlogy(0, 0) == 0`).",
    ),
    Function(
        code="NPT114",
        qualname="scipy.special.xlog1py",
        torch_op="special.xlog1py",
        loops={"float32": "float32", "float64": "float64"},
        kind=BINARY,
        implementation="_binary",
        domain=(-0.9, 10.0),
    ),
    Function(
        code="NPT201",
        qualname="scipy.special.softmax",
        torch_op="softmax",
        loops={"float32": "float32", "float64": "float64"},
        kind=REDUCTION,
        implementation="_softmax",
        bench_kwargs={"axis": 0},
        why="`scipy.special.softmax` makes four full passes over its input and allocates three full-size "
        "temporaries (`x - x_max`, its `exp`, the quotient); the helper computes SciPy's expressions in the result's "
        "own buffer with torch's multithreaded kernels. It calls torch only where that reproduces SciPy's result, "
        "and SciPy itself everywhere else.",
        known_problems="torch serves float32 and float64 inputs, and int32/int64 ones (SciPy's integer `x - x_max`, "
        "then float64). `x - x_max` is bitwise SciPy's; float64 sums are NumPy's own in SciPy's order (within 4 ULP "
        "of SciPy on the catalogue's inputs, as accurate); float32 sums accumulate in float64: up to 41 ULP from "
        "SciPy where SciPy's own float32 sum drifts (SciPy 41.7 ULP from exact, the helper 2.3; docs/catalogue.md). "
        "SciPy itself runs for slices whose maximum is NaN or infinite (all-`-inf` slices included), other dtypes, "
        "empty and 0-d inputs, non-ndarray inputs, broadcast views and arrays with a length-1 axis (SciPy's result "
        "strides there are not reproduced), `np.errstate(under=...)` other than `ignore`, and maxima from which "
        "`x - x_max` may overflow unless `over='ignore'`. On a Dask array the helper returns what SciPy returns: a "
        "NumPy array, or under `SCIPY_ARRAY_API=1` a lazy array whose blocks are helper calls where the reduced axes "
        "lie in one chunk (SciPy's own graph otherwise). No loop is verified on CUDA.",
    ),
    Function(
        code="NPT202",
        qualname="scipy.special.log_softmax",
        torch_op="log_softmax",
        loops={"float32": "float32", "float64": "float64"},
        kind=REDUCTION,
        implementation="_softmax",
        bench_kwargs={"axis": 0},
        why="`scipy.special.log_softmax` makes four full passes over its input and allocates three full-size "
        "temporaries; the helper computes SciPy's expressions (`x - x_max`, bitwise SciPy's, minus the log of the "
        "sum of its `exp`) in the result's own buffer with torch's multithreaded kernels. It calls torch only where "
        "that reproduces SciPy's result, and SciPy itself everywhere else.",
        known_problems="As `softmax` (NPT201): float32/float64, and int32/int64 computed in float64; `x - x_max` is "
        "bitwise SciPy's and the sums and their logs are NumPy's own in SciPy's order (float32 too: a float64 sum "
        "could turn SciPy's exact 0.0 at a slice's maximum into -1.2e-7), so only torch's `exp` differs: within 2 "
        "ULP of `max(|result|, 1)` on the catalogue's inputs, as accurate as SciPy (docs/catalogue.md). SciPy itself "
        "for non-finite maxima and the other cases listed there.",
    ),
)

FUNCTIONS_BY_NAME: Mapping[str, Function] = {row.name: row for row in FUNCTIONS}
ELEMENTWISE_FUNCTIONS: tuple[Function, ...] = tuple(row for row in FUNCTIONS if row.kind == ELEMENTWISE)
