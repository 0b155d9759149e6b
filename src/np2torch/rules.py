"""The rule table: the one place that knows which functions np2torch handles.

The linter, the fixer, ``--select``/``--ignore``, the rule docs and the
fixture-coverage tests all read :data:`RULES`.  Adding a function is one row
here, its helper in :mod:`np2torch.runtime` and its fixtures.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping


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
    fix_safety: str = "safe"
    """``safe``: the helper returns what the original returns for every input."""

    @property
    def name(self) -> str:
        """The original's short name, e.g. ``logsumexp``."""
        return self.qualname.rpartition(".")[2]

    def message(self) -> str:
        return f"`{self.qualname}` can run on torch via `np2torch.runtime.{self.helper}`"

    def fix_title(self, alias: str) -> str:
        return f"Replace with `{alias}.{self.helper}`"


_UFUNC_WHY = (
    "Over large arrays NumPy computes `{name}` on one core; torch's vectorized, "
    "multithreaded kernel (or CUDA) is several times faster. The helper calls "
    "torch only where it returns NumPy's dtype, shape, memory order, special values "
    "and floating-point warnings, and calls NumPy itself everywhere else."
)

RULES: tuple[Rule, ...] = (
    Rule(
        code="NPT001",
        qualname="numpy.exp",
        helper="exp",
        summary="`numpy.exp` call or reference",
        why=_UFUNC_WHY.format(name="exp"),
    ),
    Rule(
        code="NPT002",
        qualname="numpy.log",
        helper="log",
        summary="`numpy.log` call or reference",
        why=_UFUNC_WHY.format(name="log"),
    ),
    Rule(
        code="NPT003",
        qualname="scipy.special.erf",
        helper="erf",
        summary="`scipy.special.erf` call or reference",
        why=_UFUNC_WHY.format(name="erf").replace("NumPy computes", "SciPy computes"),
    ),
    Rule(
        code="NPT004",
        qualname="scipy.special.logsumexp",
        helper="logsumexp",
        summary="`scipy.special.logsumexp` call or reference",
        why=(
            "`scipy.special.logsumexp` makes several full passes and temporaries over "
            "its input; torch's fused reduction is several times faster on large arrays. "
            "The helper calls torch only where it reproduces SciPy's result, and SciPy "
            "itself everywhere else."
        ),
    ),
)

RULES_BY_CODE: Mapping[str, Rule] = {rule.code: rule for rule in RULES}
RULES_BY_QUALNAME: Mapping[str, Rule] = {rule.qualname: rule for rule in RULES}


def _check_table(rules: tuple[Rule, ...]) -> None:
    codes = [r.code for r in rules]
    names = [r.qualname for r in rules]
    helpers = [r.helper for r in rules]
    for label, values in (("code", codes), ("qualified name", names), ("helper", helpers)):
        dupes = {v for v in values if values.count(v) > 1}
        if dupes:
            raise AssertionError(f"duplicate rule {label}: {sorted(dupes)}")


_check_table(RULES)


def select_rules(select: list[str] | None = None, ignore: list[str] | None = None) -> tuple[Rule, ...]:
    """The rules enabled by ``select``/``ignore`` prefixes (``NPT``, ``NPT00``, ``NPT001``, ``ALL``).

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

    chosen = list(RULES) if select is None else [r for s in select for r in matches(s)]
    dropped = {r.code for s in (ignore or []) for r in matches(s)}
    seen: set[str] = set()
    result = []
    for rule in chosen:
        if rule.code not in dropped and rule.code not in seen:
            seen.add(rule.code)
            result.append(rule)
    return tuple(sorted(result, key=lambda r: r.code))
