"""Test-wide setup: the runtime decides from the built-in profile, and nothing is written to the user's caches.

``NP2TORCH_PROFILE=builtin`` makes every dispatch decision a function of the
shipped profile alone (no on-the-spot measurement, the same on every machine);
tests of the machine profile set their own. Subprocesses inherit both.
"""

from __future__ import annotations

import os
import tempfile

os.environ["NP2TORCH_PROFILE"] = "builtin"
os.environ.setdefault("NP2TORCH_CACHE_DIR", tempfile.mkdtemp(prefix="np2torch-test-cache-"))
# The lint cache (`np2torch check`) has its own variable; without it a run in the checkout writes .np2torch_cache there.
os.environ.setdefault("NP2TORCH_LINT_CACHE_DIR", tempfile.mkdtemp(prefix="np2torch-test-lint-cache-"))
