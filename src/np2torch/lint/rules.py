"""The rule table: the one place that knows which functions np2torch handles.

The linter, the fixer, ``--select``/``--ignore``, the rule docs
(``np2torch explain``, ``docs/rules.md``) and the fixture-coverage tests all
read :data:`RULES`.  A function's rule is derived from its row in the function
table (:mod:`np2torch.runtime.table`, standard library only: importing it loads no NumPy):
adding a function is that row and its fixtures (CONTRIBUTING.md); its page
is generated from the row (a reduction's row spells out its "why" and "known
problems").  Pattern rules are written here.

Code ranges (the hundreds digit names the category, see :data:`CODE_RANGES`):

* ``NPT0xx`` elementary functions (exponentials, logarithms, trigonometry)
* ``NPT1xx`` special functions
* ``NPT2xx`` reductions
* ``NPT8xx`` suppressions (the ``# noqa`` comments themselves; opt-in, no function)
* ``NPT9xx`` patterns (several calls rewritten as one)

``NPT001``-``NPT004`` predate the ranges and keep their codes
(:data:`LEGACY_CODES`): ``NPT003`` (erf) is a special function and ``NPT004``
(logsumexp) a reduction.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from np2torch.runtime.table import BINARY, FUNCTIONS, Function

ELEMENTARY = "elementary functions"
SPECIAL = "special functions"
REDUCTION = "reductions"
PATTERN = "patterns"
SUPPRESSION = "suppressions"

CODE_RANGES: Mapping[str, str] = {"0": ELEMENTARY, "1": SPECIAL, "2": REDUCTION, "8": SUPPRESSION, "9": PATTERN}
"""The hundreds digit of a code (``NPT1xx`` -> ``"1"``) -> its category."""

RANGES_FROM = "NPT005"
"""The first code assigned under the ranges: the codes before it keep their numbers whatever their category."""
LEGACY_CODES = frozenset(row.code for row in FUNCTIONS if row.code < RANGES_FROM)
"""The codes assigned before the ranges existed (``NPT001``-``NPT004``), derived from the table."""

FIX_SAFETIES = ("safe", "unsafe")

NESTED, RATIO, DIFFERENCE = "nested", "ratio", "difference"
PATTERN_FORMS: Mapping[str, int] = {NESTED: 3, RATIO: 2, DIFFERENCE: 1}
"""A pattern rule's form (:attr:`Rule.form`) -> how many qualified names it is made of."""


@dataclass(frozen=True)
class Rule:
    code: str
    """Stable finding code, e.g. ``NPT001``."""
    qualname: str
    """Fully qualified name of the original, e.g. ``scipy.special.logsumexp``."""
    helper: str
    """Name of the drop-in helper in the runtime module."""
    summary: str
    """What the rule finds, one line."""
    why: str
    """Why the rewrite is worth it."""
    category: str = ELEMENTARY
    """One of the values of :data:`CODE_RANGES`; the code's range must match it."""
    fix_safety: str = "safe"
    """``safe``: the helper returns what the original returns for every input.
    ``unsafe``: the rewrite can change results (e.g. rounding); reported always,
    applied only with ``--unsafe-fixes``."""
    args: str = "x"
    """The arguments of the generated example call, e.g. ``"x, y"`` for a binary function."""
    example: str | None = None
    """The docs' "Example" code; generated from ``qualname`` and ``args`` when ``None``."""
    use_instead: str | None = None
    """The docs' "Use instead" code; generated from ``helper`` and ``args`` when ``None``."""
    fix_safety_note: str | None = None
    """The docs' "Fix safety" text; a standard sentence for ``fix_safety`` when ``None``."""
    known_problems: str = ""
    """The docs' "Known problems": where the helper falls back to NumPy/SciPy, measured gaps."""
    pattern: tuple[str, ...] = ()
    """A pattern rule (NPT9xx): the qualified names of the calls its ``form`` is made of.
    Empty for a function rule. ``qualname`` is then the first of them."""
    form: str = NESTED
    """A pattern's shape, one of :data:`PATTERN_FORMS` (the table check refuses a pattern whose
    names do not fit its form rather than let a row promise what the engine does not match):

    * ``nested``: ``(outer, reduction, inner)``, ``outer(reduction(inner(x), ...))`` or
      ``outer(inner(x).reduction(...))`` -> ``<alias>.<helper>(x, ...)``
      (``("numpy.log", "numpy.sum", "numpy.exp")``);
    * ``ratio``: ``(inner, reduction)``, ``inner(x) / reduction(inner(x), axis, keepdims=True)``
      or ``inner(x) / inner(x).reduction(axis, keepdims=True)`` -> ``<alias>.<helper>(x, axis)``;
    * ``difference``: ``(reduction,)``, ``x - reduction(x, axis, keepdims=True)`` ->
      ``<alias>.<helper>(x, axis)``.

    ``x`` is a name or an attribute of one (written twice in the last two forms: the same
    expression, evaluated once by the helper); without ``axis`` (or ``axis=None``) ``keepdims``
    may be left out, the reduction being a scalar."""
    title: str | None = None
    """The rule's name when it is not the function's short name (pattern rules)."""
    message_text: str | None = None
    """The finding's message when it is not the standard "can run on torch" one (``{runtime_module}`` in it is
    the module the fixes import)."""
    default: bool = True
    """On without ``--select``.  An opt-in rule (a function row with ``default=False``) is enabled
    only by a selector that names it: its code, a prefix of it (``NPT1``) or ``ALL``."""

    @property
    def is_pattern(self) -> bool:
        return bool(self.pattern)

    @property
    def is_meta(self) -> bool:
        """A rule about np2torch's own ``# noqa`` comments (NPT8xx): no function, no helper; its fix edits a comment."""
        return self.category == SUPPRESSION

    @property
    def is_function(self) -> bool:
        """A rule that names one function (everything but the patterns and the NPT8xx rules)."""
        return not self.is_pattern and not self.is_meta

    @property
    def name(self) -> str:
        """The original's short name, e.g. ``logsumexp`` (or the pattern rule's title)."""
        return self.title or self.qualname.rpartition(".")[2]

    def message(self, runtime_module: str = "np2torch.runtime") -> str:
        """The finding's message; the helper named in the module the fixes import (``--runtime-module``)."""
        if self.message_text is not None:
            return self.message_text.format(runtime_module=runtime_module)
        return f"`{self.qualname}` can run on torch via `{runtime_module}.{self.helper}`"

    def fix_title(self, alias: str) -> str:
        if self.is_meta:
            return "Remove the unused `noqa` code"
        return f"Replace with `{alias}.{self.helper}`"

    @property
    def fixable(self) -> bool:
        """Whether findings of this rule can carry a fix (safe or unsafe): all can."""
        return True

    def _import_and_prefix(self) -> tuple[str, str]:
        module, _, _ = self.qualname.rpartition(".")
        if module == "numpy":
            return "import numpy as np", "np."
        if module == "scipy.special":
            return "from scipy import special", "special."
        return f"import {module}", f"{module}."

    @property
    def example_code(self) -> str:
        if self.example is not None:
            return self.example
        import_line, prefix = self._import_and_prefix()
        return f"{import_line}\n\ny = {prefix}{self.name}({self.args})\n"

    @property
    def use_instead_code(self) -> str:
        if self.use_instead is not None:
            return self.use_instead
        return f"import np2torch.runtime as np2t\n\ny = np2t.{self.helper}({self.args})\n"

    @property
    def fix_safety_text(self) -> str:
        if self.fix_safety_note is not None:
            return self.fix_safety_note
        if self.fix_safety == "safe":
            return (
                f"The fix is safe: `np2torch.runtime.{self.helper}` returns what `{self.qualname}` "
                "returns (dtype, shape, special values, warnings and errors) for every input, "
                "calling the original itself wherever torch cannot match it. It keeps every "
                "argument as written and adds one `import np2torch.runtime as np2t` (as `_np2t` in a "
                "module that lists its own names, `__all__ = [n for n in dir() if not n.startswith(\"_\")]`, "
                "so that the import is not one of them). "
                "That holds for calls. A reference that passes the function on (`act = np.exp`, "
                "`map(np.exp, xs)`, `fn=np.log`) is an unsafe fix, applied only with `--unsafe-fixes`: "
                "the helper is a plain function, not the ufunc, so wherever the reference flows "
                "`act is np.exp`, dict lookups keyed by the ufunc, `isinstance(act, np.ufunc)`, "
                "ufunc attributes (`.nin`, `.reduce`) and libraries' ufunc fast paths (pandas) can change. "
                "Calls inside a function that numba, `jax.jit`, TorchScript/`torch.compile` or "
                "`cupy.fuse` compiles are reported without a fix: those compilers cannot compile the helper. "
                "A compiler is any name one of whose bindings can be one (`fastjit = numba.njit(cache=True)`, "
                "the optional-numba fallback `def njit(*a, **k)`, a wrapper function, an attribute of a package "
                "loaded by its name: `numba = import_optional_dependency(\"numba\")`); a function it is "
                "applied to by call (`njit(kernel)`, through assignments and loops: `for k in (f, g): "
                "njit(k)`) or by `numba.jit_module` is compiled (one a call returns, `njit(make())`, is "
                "not followed; one taken from a container, `njit(fs[i])`, or by unpacking or a loop over a call, "
                "`{k: njit(f) for k, f in KERNELS.items()}`, makes every function compiled, as does a compiler "
                "handed on as a value, `map(njit, fs)`). So is a function that another module of the project "
                "compiles (`from pkg.kernels import kernel` then `numba.njit(kernel)`, `jax.jit(kernels.step)`, "
                "through re-exports), and one that a compiler imported from another module of the project "
                "decorates (`from .util import jit` then `@jit`); `check`, `fix` and `np2torch run` index the "
                "project's modules, the language server does not. "
                "A name that may mean something else at run time is reported without a fix: one that a "
                "star import after its import may rebind (np2torch assumes any star import may bind any "
                "name: which names NumPy, SciPy, `math` or a helper module export is known only when the "
                "program runs, and a list in np2torch would drift), and one that a write to the module's "
                "namespace may rebind (`globals()[...] = ...`, `globals().update(...)`, `vars()` or "
                "`locals()` at module level, `setattr(sys.modules[__name__], ...)`, a function's `__globals__` or a "
                "frame's `f_globals`, `exec` at module level). "
                "So is a call inside a self-documenting f-string field (`f\"{np.exp(x)=}\"` prints its "
                "source text). The runtime import goes before the first statement that can run a "
                "rewritten call (a function body runs when it is called), after the NumPy/SciPy "
                "import the call resolves through, even inside `if __name__ == \"__main__\":` or a "
                "`try:`, and after the set-up code before that statement (`sys.path.insert(...)`, "
                "`os.environ[...] = ...`: the runtime reads `NP2TORCH_*` when it loads); where "
                "no line can hold it, or a star import runs after it (it may rebind the alias), the "
                "findings have no fix. So has a call that a statement can run before the module-level "
                "import its name resolves through (`f(x)` above `import numpy as np`, with `np.exp` in "
                "`f`, an import further down its own function, or a `global np` import in a function that may run "
                "later): the original raises NameError "
                "there, the rewritten call would not. An import inside a `try` that catches `ImportError` (or "
                "`with suppress(ImportError)`) is feature detection and is kept; comments inside a "
                "rewritten expression are kept."
            )
        return (
            "The fix is unsafe: the rewritten code can round differently from the original. "
            "It is reported always and applied only with `--unsafe-fixes`."
        )


_COMMON_GAPS = (
    "Under `np.errstate(all='ignore')` the sign bit of a NaN result can differ from x86 NumPy's "
    "(IEEE 754 leaves it unspecified). With `torch.set_flush_denormal(True)` enabled by user code, "
    "subnormal values differ. "
)

_EVERY_HELPER_GAPS = (
    "A spy on the original (`mock.patch.object({module}, \"{helper}\", ...)`, `monkeypatch.setattr`) no longer sees "
    "the fixed calls: they call `np2t.{helper}`, which keeps the original it imported; patch "
    "`np2torch.runtime.{helper}` as well. In a child forked from a process that imported torch (and "
    "`np2torch.runtime`), torch runs on one thread, the program's own torch code included: GNU OpenMP's "
    "pool does not survive `fork`, and the child's first parallel op would hang. A computation whose "
    "outcome hangs on the last bits (an ill-conditioned fit) can end differently within the ULP bounds: "
    "run it under `np2t.using(device=\"numpy\")`. See docs/runtime.md, \"Known gaps\"."
)

_MEASURED_PER_MACHINE = (
    "Which dtypes and sizes run on torch is measured on each machine (`np2torch tune`; without it "
    "the built-in profile decides): where torch is not faster -- NumPy 2's SIMD float64 loops on a "
    "2-core AVX2 machine, for instance -- the original runs, so there is no slow-down. The path is "
    "decided by the call and the profile alone, and torch's work is cut into aligned blocks (a "
    "reduction's fixed by the shape), so a program gives the same bits on every run of the machine. "
)

_UFUNC_WHY = (
    "Over large arrays {library} computes `{name}` on one core; torch's vectorized, "
    "multithreaded kernel (or CUDA) is several times faster on many machines. The helper calls "
    "torch only where it returns the original's dtype, shape, memory order, special values "
    "and floating-point warnings, and only where this machine's profile measured it faster; "
    "it calls the original everywhere else."
)

_BINARY_GAPS = {
    BINARY: "Only plain calls `f(x, y)` of arrays and Python scalars take the torch path: `out=`, `where=`, "
    "`dtype=` and the other keywords, NumPy scalars, subclasses and duck arrays (Dask) are the original's call; "
    "so are calls under `np.errstate(under=...)` other than `ignore`. ",
}


def _category(row: Function) -> str:
    if row.kind == "reduction":
        return REDUCTION
    return SPECIAL if row.module == "scipy.special" else ELEMENTARY


def _loops_text(row: Function) -> str:
    """The generated "Known problems" opening: the loops torch serves and the row's measured note."""
    loops = ", ".join(name if compute == name else f"{name} (computed in {compute}, rounded once)"
                      for name, compute in row.loops.items())
    note = f" {row.note}" if row.note else ""
    return (f"torch serves the original's {loops} loops (integer and bool inputs the original casts into "
            f"one of them too); every other dtype calls the original.{note} ")


def _function_rule(row: Function) -> Rule:
    """The rule for one row of the function table: its facts and its page's prose from the row."""
    library = "SciPy" if row.module.startswith("scipy") else "NumPy"
    return Rule(
        code=row.code,
        qualname=row.qualname,
        helper=row.name,
        summary=f"`{row.qualname}` call or reference",
        category=_category(row),
        why=row.why or _UFUNC_WHY.format(library=library, name=row.name),
        known_problems=(row.known_problems + " " if row.known_problems else _loops_text(row) + _BINARY_GAPS.get(row.kind, "")
                        + _MEASURED_PER_MACHINE + _COMMON_GAPS) + _EVERY_HELPER_GAPS.format(
                            module="np" if row.module == "numpy" else row.module, helper=row.name),
        default=row.default,
        args="x1, x2" if row.kind == BINARY else "x",
    )


FUNCTION_TABLE = FUNCTIONS
"""The rows of np2torch/runtime/table.py: the one description of each function np2torch serves."""

RULES: tuple[Rule, ...] = tuple(sorted((_function_rule(row) for row in FUNCTION_TABLE), key=lambda rule: rule.code)) + (
    Rule(
        code="NPT901",
        qualname="numpy.log",
        pattern=("numpy.log", "numpy.sum", "numpy.exp"),
        title="hand-written-logsumexp",
        helper="logsumexp",
        category=PATTERN,
        fix_safety="unsafe",
        summary="a hand-written log-sum-exp, `np.log(np.sum(np.exp(x), axis=k))` or "
        "`np.log(np.exp(x).sum(axis=k))` (`axis` and `keepdims` by keyword or position)",
        message_text="`log(sum(exp(x)))` overflows for large `x`; `{runtime_module}.logsumexp` computes it stably",
        why=(
            "`np.exp(x)` overflows to `inf` once `x` exceeds about 709 (float64) or 88 (float32), "
            "and underflows to 0 for very negative `x`, so the hand-written form returns `inf` or "
            "`-inf` where the true value is finite. `logsumexp` subtracts the maximum first and "
            "never overflows; np2torch's helper also computes it in one fused torch pass instead "
            "of three full-size NumPy temporaries."
        ),
        example="import numpy as np\n\ny = np.log(np.sum(np.exp(x), axis=1))\n",
        use_instead="import np2torch.runtime as np2t\n\ny = np2t.logsumexp(x, axis=1)\n",
        fix_safety_note=(
            "The fix is unsafe: `logsumexp` rounds differently from the hand-written form (it "
            "subtracts the maximum before exponentiating), and returns finite values where the "
            "original overflowed, so results can change in the last bits or from `inf` to a number. "
            "It is reported always and applied only with `--unsafe-fixes`."
        ),
        known_problems=(
            "Only the spellings above match: `np.sum` with `axis`/`keepdims` (a `dtype`, `out`, "
            "`where` or `initial` argument, or Python's built-in `sum`, is left alone), and `np.exp` "
            "with one argument. A safe fix alone turns the pattern into "
            "`np2t.log(np.sum(np2t.exp(x)))`, which is no longer reported: run "
            "`np2torch fix --unsafe-fixes` to get `logsumexp`. For complex input `logsumexp` picks "
            "a branch of the logarithm that `np.log` may not. On a pandas DataFrame or Series the "
            "hand-written form returns a Series (pandas dispatches the ufuncs and `np.sum`), "
            "`logsumexp` a bare ndarray or float without the index; np2torch cannot tell the "
            "operand's type from the source, so review such call sites before `--unsafe-fixes`."
        ),
    ),
    Rule(
        code="NPT902",
        qualname="numpy.exp",
        pattern=("numpy.exp", "numpy.sum"),
        form=RATIO,
        title="hand-written-softmax",
        helper="softmax",
        category=PATTERN,
        fix_safety="unsafe",
        default=False,
        summary="a hand-written softmax, `np.exp(x) / np.exp(x).sum(axis=k, keepdims=True)` or "
        "`np.exp(x) / np.sum(np.exp(x), axis=k, keepdims=True)` (`axis` by keyword or position; "
        "without `axis`, `keepdims` may be left out)",
        message_text="`exp(x) / sum(exp(x))` overflows for large `x`; `np2torch.runtime.softmax` computes it stably",
        why=(
            "`np.exp(x)` overflows to `inf` once `x` exceeds about 709 (float64) or 88 (float32), so "
            "the hand-written softmax returns `nan` (`inf / inf`) where the true value is finite, and "
            "it computes `np.exp(x)` twice. `scipy.special.softmax`, which np2torch's helper "
            "reproduces, subtracts each slice's maximum first and never overflows."
        ),
        example="import numpy as np\n\np = np.exp(x) / np.exp(x).sum(axis=1, keepdims=True)\n",
        use_instead="import np2torch.runtime as np2t\n\np = np2t.softmax(x, axis=1)\n",
        fix_safety_note=(
            "The fix is unsafe: `softmax` rounds differently from the hand-written form (it "
            "subtracts the maximum before exponentiating) and returns numbers where the original "
            "overflowed to `nan`, and it evaluates `x` once instead of twice. It is reported "
            "always and applied only with `--unsafe-fixes` (and, like the `softmax` rule, only "
            "when selected: `--select NPT902`)."
        ),
        known_problems=(
            "Only the spellings above match, with the same `x` on both sides: a name or an "
            "attribute of one (`self.logits`); a call, subscript or arithmetic as `x` is left "
            "alone, as are a `dtype`, `out`, `where` or `initial` argument of the sum, Python's "
            "built-in `sum`, and `axis` without `keepdims=True` (the division then broadcasts "
            "along other axes: not a softmax). A safe fix alone turns `np.exp` into `np2t.exp`, "
            "after which the pattern is no longer reported: run `np2torch fix --unsafe-fixes "
            "--select ...,NPT902` first. On a pandas object the hand-written form keeps the index, "
            "`softmax` returns a bare ndarray; review such call sites before `--unsafe-fixes`."
        ),
    ),
    Rule(
        code="NPT903",
        qualname="scipy.special.logsumexp",
        pattern=("scipy.special.logsumexp",),
        form=DIFFERENCE,
        title="hand-written-log-softmax",
        helper="log_softmax",
        category=PATTERN,
        fix_safety="unsafe",
        default=False,
        summary="a hand-written log-softmax, `x - logsumexp(x, axis=k, keepdims=True)` "
        "(`scipy.special.logsumexp`; `axis` by keyword or position; without `axis`, `keepdims` may be left out)",
        message_text="`x - logsumexp(x, ...)` is `log_softmax(x, ...)`; `np2torch.runtime.log_softmax` computes it in one call",
        why=(
            "`x - logsumexp(x, axis, keepdims=True)` reads `x` twice and allocates the reduction "
            "and the difference separately; `scipy.special.log_softmax`, which np2torch's helper "
            "reproduces, computes the same quantity in one call."
        ),
        example="from scipy.special import logsumexp\n\nlog_p = x - logsumexp(x, axis=1, keepdims=True)\n",
        use_instead="import np2torch.runtime as np2t\n\nlog_p = np2t.log_softmax(x, axis=1)\n",
        fix_safety_note=(
            "The fix is unsafe: `log_softmax` rounds differently (it subtracts the maximum, then "
            "the log of the shifted sum: `(x - m) - log(sum(exp(x - m)))`, not `x - (m + "
            "log(...))`), and differs where a slice holds infinities or NaN (SciPy's `logsumexp` "
            "and `log_softmax` treat them apart). It is reported always and applied only with "
            "`--unsafe-fixes` (and, like the `log_softmax` rule, only when selected: `--select NPT903`)."
        ),
        known_problems=(
            "Only the spellings above match, with the same `x` on both sides (a name or an "
            "attribute of one); `b=`, `return_sign`, or `axis` without `keepdims=True` are left "
            "alone. A safe fix alone turns `logsumexp` into `np2t.logsumexp` (NPT004), after which "
            "the pattern is no longer reported: run `np2torch fix --unsafe-fixes --select ...,NPT903` first."
        ),
    ),
)
UNUSED_NOQA = Rule(
    code="NPT801",
    qualname="",
    helper="",
    title="unused-noqa",
    category=SUPPRESSION,
    default=False,
    summary="an `NPT` code in a line's `# noqa: ...` comment that suppresses nothing on that line "
    "(as ruff's RUF100)",
    message_text="Unused `noqa` code: no finding of it on this line",
    why=(
        "A `# noqa: NPT001` whose finding is gone (the call was fixed, moved or removed) silences the next "
        "`numpy.exp` someone writes on that line, and tells readers of a finding that is not there. Baselines "
        "(`np2torch check --add-noqa`) leave many such comments behind as the code base moves on."
    ),
    example="import math\n\ny = math.exp(x)  # noqa: NPT001\n",
    use_instead="import math\n\ny = math.exp(x)\n",
    fix_safety_note=(
        "Safe fix: the code is removed from the comment, the whole `# noqa: ...` when it was its only code (the "
        "rest of the comment stays; no line is added or removed). Only codes of rules this run selected are "
        "judged, and codes that name no np2torch rule; a bare `# noqa` and other tools' codes are never reported."
    ),
    known_problems=(
        "A code is judged against the findings of this run's selection: with `--select NPT002`, a "
        "`# noqa: NPT001` is not reported (its rule did not run). Like every rule it is suppressed by "
        "`# noqa: NPT801` on the line."
    ),
)
RULES = tuple(sorted((*RULES, UNUSED_NOQA), key=lambda rule: rule.code))  # in code order: NPT8xx before the NPT9xx patterns

RULES_BY_CODE: Mapping[str, Rule] = {rule.code: rule for rule in RULES}
RULES_BY_QUALNAME: Mapping[str, Rule] = {rule.qualname: rule for rule in RULES if rule.is_function}
FUNCTION_RULES: tuple[Rule, ...] = tuple(rule for rule in RULES if rule.is_function)
"""The rows that each name one function (everything but the NPT8xx and NPT9xx rules)."""
DEFAULT_RULES: tuple[Rule, ...] = tuple(rule for rule in RULES if rule.default)
"""The rules on without ``--select``; the others are opt-in (``--select NPT1``, an exact code, ``ALL``)."""


def code_category(code: str) -> str | None:
    """The category a code's range stands for (``NPT1xx`` -> special functions); None if unassigned."""
    return CODE_RANGES.get(code[3:4]) if code.startswith("NPT") and len(code) == 6 else None


def _check_table(rules: tuple[Rule, ...]) -> None:
    for rule in rules:
        if rule.category not in CODE_RANGES.values():
            raise AssertionError(f"{rule.code}: unknown category {rule.category!r}")
        if rule.fix_safety not in FIX_SAFETIES:
            raise AssertionError(f"{rule.code}: fix_safety must be one of {FIX_SAFETIES}")
        if rule.code not in LEGACY_CODES and code_category(rule.code) != rule.category:
            raise AssertionError(f"{rule.code}: code range is {code_category(rule.code)!r}, row says {rule.category!r}")
    for rule in rules:
        if rule.is_pattern != (rule.category == PATTERN) or (rule.is_pattern and rule.pattern[0] != rule.qualname):
            raise AssertionError(f"{rule.code}: a pattern row is in the patterns category and names its outer call")
        if rule.is_pattern and len(rule.pattern) != PATTERN_FORMS.get(rule.form):
            raise AssertionError(f"{rule.code}: a {rule.form!r} pattern is not one of the forms the engine matches "
                                 f"({', '.join(f'{form}: {n} names' for form, n in PATTERN_FORMS.items())})")
    functions = [r for r in rules if r.is_function]
    codes = [r.code for r in rules]
    names = [r.qualname for r in functions]
    helpers = [r.helper for r in functions]
    for label, values in (("code", codes), ("qualified name", names), ("helper", helpers)):
        dupes = {v for v in values if values.count(v) > 1}
        if dupes:
            raise AssertionError(f"duplicate rule {label}: {sorted(dupes)}")


_check_table(RULES)


def select_rules(select: list[str] | None = None, ignore: list[str] | None = None) -> tuple[Rule, ...]:
    """The rules enabled by ``select``/``ignore`` prefixes (``NPT``, ``NPT00``, ``NPT001``, ``ALL``).

    Without ``select``: the default rules only (:data:`DEFAULT_RULES`).  A selector enables every
    rule it matches, opt-in rules included (as ruff's ``--select`` with preview on).
    Raises ``ValueError`` naming the first selector that matches no rule.
    """

    def matches(selector: str) -> list[Rule]:
        sel = selector.strip().upper()
        if sel == "ALL":
            return list(RULES)
        hit = [r for r in RULES if r.code.startswith(sel)]
        if not hit:
            raise ValueError(f"unknown rule selector {selector!r}")
        return hit

    chosen = list(DEFAULT_RULES) if select is None else [r for s in select for r in matches(s)]
    dropped = {r.code for s in (ignore or []) for r in matches(s)}
    seen: set[str] = set()
    result = []
    for rule in chosen:
        if rule.code not in dropped and rule.code not in seen:
            seen.add(rule.code)
            result.append(rule)
    return tuple(sorted(result, key=lambda r: r.code))
