"""A helper's peak memory under every error state: the original's plus a block's temporaries (issue 37, item 5).

Measured as ``benchmarks/errstate_memory.py`` measures it: one call in a fresh process, the peak resident set's
growth over the call (Linux's ``/proc/self/clear_refs``), the torch path forced.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytestmark = pytest.mark.skipif(not os.path.exists("/proc/self/clear_refs"), reason="Linux's peak-RSS reset only")

_SPEC = importlib.util.spec_from_file_location("errstate_memory", Path(__file__).parents[2] / "benchmarks" / "errstate_memory.py")
assert _SPEC is not None and _SPEC.loader is not None
errstate_memory = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(errstate_memory)

N = 3_000_000
BLOCK_KB = 4 * 1024
"""A settle block's temporaries (262,144 float64 elements: their absolute values and masks), rounded up."""


@pytest.mark.parametrize("state", ["default", "raise", "under-warn"])
@pytest.mark.parametrize("name", ["exp", "hypot"])
def test_a_reporting_error_state_costs_at_most_a_block_more_than_the_original(name, state):
    original = errstate_memory.peak_kb(name, state, "original", N)
    helper = errstate_memory.peak_kb(name, state, "helper", N)
    assert helper <= original + BLOCK_KB, (helper, original)
