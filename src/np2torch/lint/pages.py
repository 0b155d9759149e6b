"""Rule pages: ``np2torch explain``, ``np2torch rules``, docs/rules.md and SARIF's help texts, from the rule table.

One module renders them, so the CLI's output, the SARIF writer and the
explain command all depend on it and it depends on none of them.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Sequence

from np2torch.lint.rules import CODE_RANGES, LEGACY_CODES, RULES, Rule

DOCS_PATH = Path("docs") / "rules.md"
RULES_URL = "https://github.com/np2torch/np2torch/blob/main/docs/rules.md"
"""Where :data:`DOCS_PATH` is published; each rule's section has the anchor of its code in lower case."""


def rule_url(code: str) -> str:
    """The address of a rule's page: its section of docs/rules.md (``<a id="npt001">``, see :func:`rules_document`)."""
    return f"{RULES_URL}#{code.lower()}"


def rules_table(rules: Sequence[Rule], fmt: str) -> list[str]:
    """The table for `np2torch rules`: code, name, function, helper, fixable, fix safety.  In JSON, also the
    keys of ``ruff rule --output-format json`` (``linter``, ``message_formats``, ``fix``, ``fix_availability``,
    ``explanation``: the rule's page, ``preview``)."""
    if fmt == "json":
        rows = [
            {"code": r.code, "name": r.name, "function": r.qualname, "helper": r.helper, "category": r.category,
             "fixable": r.fixable, "fix_safety": r.fix_safety, "default": r.default, "summary": r.summary,
             "linter": "np2torch", "message_formats": [r.message()],
             # a finding of any rule may have no fix (the reasons: docs/rules.md), as ruff's "sometimes"
             "fix": "Fix is sometimes available." if r.fixable else "Fix is not available.",
             "fix_availability": "Sometimes" if r.fixable else "None", "explanation": page(r), "preview": False}
            for r in rules
        ]
        return [json.dumps(rows, indent=2)]
    header = ("code", "name", "function", "helper", "fixable", "safety", "default")
    body = [
        (r.code, r.name, r.qualname or "-", f"np2torch.runtime.{r.helper}" if r.helper else "-",
         "yes" if r.fixable else "no", r.fix_safety if r.fixable else "-", "on" if r.default else "opt-in")
        for r in rules
    ]
    if fmt == "markdown":
        return [
            "| " + " | ".join(header) + " |",
            "|" + "---|" * len(header),
            *("| " + " | ".join(f"[{c}](#{c.lower()})" if i == 0 else f"`{c}`" if i in (2, 3) and c != "-" else c
                                for i, c in enumerate(row)) + " |" for row in body),
        ]
    widths = [max(len(row[i]) for row in [header, *body]) for i in range(len(header))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in [header, *body]]


def _code_block(text: str) -> str:
    return f"```python\n{text.rstrip(chr(10))}\n```"


def page(rule: Rule, heading: str = "#") -> str:
    """The rule's page in Markdown; ``heading`` is the level of its title."""
    sub = heading + "#"
    fix_line = "Fix is not available." if not rule.fixable else (
        f"Fix is always available ({rule.fix_safety})." if rule.fix_safety == "safe" else
        "Fix is available with `--unsafe-fixes`.")
    selection = "" if rule.default else (
        f" Opt-in: enabled only by a selector naming it (`--select {rule.code}`, `--select {rule.code[:4]}`, `ALL`)."
    )
    origin = f"Derived from `{rule.qualname}`" if rule.qualname else "About np2torch's `# noqa` comments"
    replaces = f" The fix replaces it with `np2torch.runtime.{rule.helper}`." if rule.helper else ""
    sections = [
        f"{heading} {rule.code}: {rule.name}",
        f"{origin} ({rule.category}). {fix_line}{selection}",
        f"{sub} What it does\n\nFinds: {rule.summary}.{replaces}",
        f"{sub} Why is this bad?\n\n{rule.why}",
        f"{sub} Example\n\n{_code_block(rule.example_code)}",
        f"{sub} Use instead\n\n{_code_block(rule.use_instead_code)}",
        f"{sub} Fix safety\n\n{rule.fix_safety_text}",
        f"{sub} Known problems\n\n{rule.known_problems or 'None known.'}",
    ]
    return "\n\n".join(sections) + "\n"


def rules_document(rules: Sequence[Rule] = RULES) -> str:
    """The whole of docs/rules.md."""
    ranges = "\n".join(f"- `NPT{digit}xx`: {category}" for digit, category in sorted(CODE_RANGES.items()))
    legacy = ", ".join(sorted(LEGACY_CODES))
    parts = [
        "# Rules\n\n"
        "<!-- Generated from the rule table by `python -m np2torch.tools.docs --write`; "
        "do not edit by hand (tests/lint/test_rules_docs.py fails when it is stale). -->",
        "Each rule finds calls of (or references to) one NumPy/SciPy function that "
        "`np2torch.runtime` serves as an exact drop-in, or a pattern of calls. "
        "`np2torch explain CODE` prints a rule's page; `np2torch rules` lists them. "
        "Rules marked opt-in are off by default and enabled only by a `--select` (or `select =`) "
        "selector that names them: their code, a prefix of it such as `NPT1`, or `ALL`. A new "
        "function's rule is opt-in until its speed is shown on the reference machines; "
        "every rule's helper is exact (docs/catalogue.md).",
        f"## Code ranges\n\n{ranges}\n\n{legacy} predate the ranges and keep their codes.",
        "## Overview\n\n" + "\n".join(rules_table(rules, "markdown")),
    ]
    for rule in rules:
        parts.append(f'<a id="{rule.code.lower()}"></a>\n\n' + page(rule, heading="##").rstrip("\n"))
    return "\n\n".join(parts) + "\n"
