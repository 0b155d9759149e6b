"""Test-wide setup: the runtime decides from the built-in profile, and nothing is written to the user's caches.

``NP2TORCH_PROFILE=builtin`` makes every dispatch decision a function of the
shipped profile alone (no on-the-spot measurement, the same on every machine);
tests of the machine profile set their own. Subprocesses inherit both.
"""

from __future__ import annotations

import math
import os
import tempfile

import pytest

os.environ["NP2TORCH_PROFILE"] = "builtin"
os.environ.setdefault("NP2TORCH_CACHE_DIR", tempfile.mkdtemp(prefix="np2torch-test-cache-"))
# The lint cache (`np2torch check`) has its own variable; without it a run in the checkout writes .np2torch_cache there.
os.environ.setdefault("NP2TORCH_LINT_CACHE_DIR", tempfile.mkdtemp(prefix="np2torch-test-lint-cache-"))


@pytest.fixture(autouse=True)
def _every_core_call_in_a_loop(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every call the profile sends to the original on every core runs on its workers, as a program's loop of them
    does: after an idle longer than ``blocks.LOOP_IDLE`` the original's single call serves one (the same bits),
    which would make what a test runs depend on how long it paused.  test_runtime_cores.py tests that rule."""
    from np2torch.runtime._paths import blocks

    monkeypatch.setattr(blocks, "LOOP_IDLE", math.inf)
