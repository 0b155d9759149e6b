"""``--format sarif``: one SARIF 2.1.0 log for code-scanning dashboards (GitHub, Azure DevOps).

The driver's rules come from the rule table; each finding is a result with a
1-based region (columns count Unicode code points: ``columnKind``).  A file
that does not parse or cannot be read is a result too, as ruff's, of level
``error`` and rule ``invalid-syntax`` or ``E902`` (no rule of the driver's);
other files that could not be checked become ``toolExecutionNotifications`` of
the invocation, which then is not ``executionSuccessful``.  A finding in a
notebook cell has its region relative to the cell (as the text output does)
and the cell number in the result's ``properties.cell``; its message starts
with ``cell N:`` for viewers that show no properties.

Fixes are not embedded: a SARIF fix is a set of text replacements, and the
runtime import a fix adds is decided per file by ``np2torch fix``.
"""

from __future__ import annotations

import json
import os
from pathlib import PurePath
from typing import Sequence
from urllib.parse import quote

from np2torch import __version__
from np2torch.lint.model import NOT_ANALYSED, CellFinding, Finding
from np2torch.lint.pages import page, rule_url
from np2torch.lint.rules import RULES, Rule

SCHEMA_URI = "https://json.schemastore.org/sarif-2.1.0.json"
LEVEL = "warning"
"""Findings are speed-ups, not bugs: dashboards show them as warnings."""


def level(code: str) -> str:
    """A finding's level (every format's severity): :data:`LEVEL`, ``error`` for a file np2torch could not analyse
    (:data:`~np2torch.lint.model.NOT_ANALYSED`)."""
    return "error" if code in NOT_ANALYSED else LEVEL


def _uri(path: str) -> str:
    """The path's own bytes, percent-encoded: a name that is not valid UTF-8 stays exact."""
    if os.path.isabs(path):
        return PurePath(path).as_uri()
    return quote(os.fsencode(path.replace(os.sep, "/")))


def _text(text: str) -> str:
    """``text`` as valid Unicode: the bytes of a name that is not UTF-8 shown as ``\\xff`` escapes.

    Python decodes such a name with lone surrogates, which no UTF-8 SARIF file can hold.
    """
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a lone surrogate that no file name decodes to
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _rule_descriptor(rule: Rule) -> dict[str, object]:

    return {
        "id": rule.code,
        "name": rule.name,
        "shortDescription": {"text": rule.summary},
        "fullDescription": {"text": rule.why},
        "help": {"text": f"Replace with np2torch.runtime.{rule.helper}" if rule.helper else rule.fix_safety_text,
                 "markdown": page(rule)},
        "helpUri": rule_url(rule.code),
        "defaultConfiguration": {"level": LEVEL},
        "properties": {"category": rule.category, "fix_safety": rule.fix_safety, "qualname": rule.qualname},
    }


def _result(finding: Finding, index: dict[str, int]) -> dict[str, object]:
    cell = finding.cell if isinstance(finding, CellFinding) else None
    text = finding.message if cell is None else f"cell {cell}: {finding.message}"
    if finding.fixable:
        text += " (fixable with `np2torch fix`)"
    elif finding.reason:
        text += f" (no fix: {finding.reason})"
    properties: dict[str, object] = {"fixable": bool(finding.fixable)}
    if cell is not None:
        properties["cell"] = cell
    result: dict[str, object] = {
        "ruleId": finding.code,
        "level": level(finding.code),
        "message": {"text": _text(text)},
        "locations": [
            {
                "physicalLocation": {
                    "artifactLocation": {"uri": _uri(finding.path)},
                    "region": {
                        "startLine": finding.line,
                        "startColumn": finding.column,
                        "endLine": finding.end_line,
                        "endColumn": finding.end_column,
                    },
                }
            }
        ],
        "properties": properties,
    }
    if finding.code in index:
        result["ruleIndex"] = index[finding.code]
    return result


def sarif_log(findings: Sequence[Finding], errors: Sequence[str] = (), rules: Sequence[Rule] = RULES) -> dict[str, object]:
    """The SARIF log as a dict: one run, every rule of the table, one result per finding."""
    index = {rule.code: i for i, rule in enumerate(rules)}
    return {
        "$schema": SCHEMA_URI,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "np2torch",
                        "version": __version__,
                        "informationUri": "https://github.com/np2torch/np2torch",
                        "rules": [_rule_descriptor(rule) for rule in rules],
                    }
                },
                "columnKind": "unicodeCodePoints",
                "invocations": [
                    {
                        "executionSuccessful": not errors,
                        "toolExecutionNotifications": [
                            {"level": "error", "message": {"text": _text(message)}} for message in errors
                        ],
                    }
                ],
                "results": [_result(finding, index) for finding in findings],
            }
        ],
    }


def sarif_document(findings: Sequence[Finding], errors: Sequence[str] = ()) -> str:
    return json.dumps(sarif_log(findings, errors), indent=2, ensure_ascii=False)
