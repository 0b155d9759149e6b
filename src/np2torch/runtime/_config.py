"""The runtime's settings as values: which device the helpers use and from which size on.

:class:`RuntimeSettings` and the parsing of ``NP2TORCH_DEVICE`` /
``NP2TORCH_MIN_SIZE`` (and of :func:`configure`'s arguments).  Which settings
are in force -- the process-wide ones or a :func:`using` block's -- is state,
kept in :mod:`._state`.

``min_size=None`` means "the machine profile decides" (:mod:`._decision.route`); a
number replaces the profile: torch from that size on.
"""

from __future__ import annotations

import numbers
import os
import re
import sys
from typing import Any, Mapping

DEVICE_ENV = "NP2TORCH_DEVICE"
CACHE_ENV = "NP2TORCH_CACHE_DIR"
MIN_SIZE_ENV = "NP2TORCH_MIN_SIZE"
EXACT_ENV = "NP2TORCH_EXACT"
EXACTNESS = ("ulp", "bits")
"""``ulp``: each call's values within the measured few ULP of the original's (torch where faster); ``bits``: only
paths that give the original's own bits (the original, its loop on every core, logsumexp's lean path)."""

_CUDA_RE = re.compile(r"cuda(?::(\d+))?\Z")

DEVICES_HELP = "cpu, cuda, cuda:N, auto or numpy"

KEEP: Any = object()
"""The default of a setting left out of :func:`configure`, :func:`using` or :meth:`RuntimeSettings.replace`."""


class RuntimeSettings:
    """The runtime's settings: ``device`` (``auto``: the fastest measured path | ``cpu`` | ``cuda`` |
    ``cuda:N`` | ``numpy``: off), ``min_size`` (a dispatch threshold in elements for every
    helper; ``None``: the machine profile decides) and ``exact`` (:data:`EXACTNESS`: ``bits`` keeps every call
    on the paths that give the original's own bits).  Immutable; ``gate`` is the size gate the
    helpers read on every call (a plain attribute, not a property)."""

    __slots__ = ("device", "min_size", "exact", "gate")
    device: str
    min_size: int | None
    exact: str
    gate: int | None

    def __init__(self, device: str = "auto", min_size: int | None = None, exact: str = "ulp") -> None:
        object.__setattr__(self, "device", device)
        object.__setattr__(self, "min_size", min_size)
        object.__setattr__(self, "exact", exact)
        # exact="bits" with a min_size: the min_size gates, the exact paths serve (torch never does).
        object.__setattr__(self, "gate", _GATE_OFF if device == "numpy" else min_size)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"RuntimeSettings is immutable; use configure() or using() to change {name!r}")

    def __eq__(self, other: object) -> bool:
        if type(other) is not RuntimeSettings:
            return NotImplemented
        return (self.device, self.min_size, self.exact) == (other.device, other.min_size, other.exact)

    def __hash__(self) -> int:
        return hash((self.device, self.min_size, self.exact))

    def __repr__(self) -> str:
        extra = "" if self.exact == "ulp" else f", exact={self.exact!r}"
        return f"RuntimeSettings(device={self.device!r}, min_size={self.min_size!r}{extra})"

    def replace(self, device: str = KEEP, min_size: int | None = KEEP, exact: str = KEEP) -> RuntimeSettings:
        """A copy with ``device``, ``min_size`` and/or ``exact`` changed (as given: not parsed)."""
        return RuntimeSettings(self.device if device is KEEP else device, self.min_size if min_size is KEEP else min_size,
                               self.exact if exact is KEEP else exact)


# Larger than any array: the helpers' size test then always routes to NumPy.
_GATE_OFF = sys.maxsize


def parse_device(value: object, source: str = "device") -> str:
    """Normalize a device name; ``ValueError`` naming ``source`` when it is not one."""
    if isinstance(value, str):
        text = value.strip().lower()
        if text in ("cpu", "auto", "numpy"):
            return text
        match = _CUDA_RE.match(text)
        if match:
            return text if match.group(1) is None else f"cuda:{int(match.group(1))}"
    raise ValueError(f"{source}={value!r} is not a valid np2torch device; use {DEVICES_HELP}")


def parse_min_size(value: object, source: str = "min_size") -> int | None:
    """A non-negative element count (``None``: the measured defaults)."""
    if value is None:
        return None
    if isinstance(value, str):
        text = value.strip().replace("_", "")
        try:
            value = int(text)
        except ValueError:
            try:
                number = float(text)
            except ValueError:
                number = float("nan")
            value = int(number) if number == number and number.is_integer() else text
    if isinstance(value, numbers.Integral) and not isinstance(value, bool) and int(value) >= 0:
        return int(value)
    raise ValueError(f"{source}={value!r} is not a valid size; use a whole number of elements >= 0")


def parse_exact(value: object, source: str = "exact") -> str:
    """``ulp`` or ``bits`` (:data:`EXACTNESS`); ``ValueError`` naming ``source`` otherwise."""
    if isinstance(value, str) and value.strip().lower() in EXACTNESS:
        return value.strip().lower()
    raise ValueError(f"{source}={value!r} is not a valid np2torch exactness; use {' or '.join(EXACTNESS)}")


def settings_from_env(environ: Mapping[str, str]) -> RuntimeSettings:
    """The settings ``NP2TORCH_DEVICE``, ``NP2TORCH_MIN_SIZE`` and ``NP2TORCH_EXACT`` give (``ValueError`` naming
    a bad one)."""
    device = environ.get(DEVICE_ENV, "").strip()
    min_size = environ.get(MIN_SIZE_ENV, "").strip()
    exact = environ.get(EXACT_ENV, "").strip()
    return RuntimeSettings(
        device=parse_device(device, DEVICE_ENV) if device else "auto",
        min_size=parse_min_size(min_size, MIN_SIZE_ENV) if min_size else None,
        exact=parse_exact(exact, EXACT_ENV) if exact else "ulp",
    )



def cache_dir() -> str:
    """np2torch's folder in the user's cache directory (``NP2TORCH_CACHE_DIR`` overrides): the machine profile's
    and ``np2torch run``'s compiled rewrites' (read before the program imports NumPy: standard library only)."""
    explicit = os.environ.get(CACHE_ENV)
    if explicit:
        return explicit
    home = os.path.expanduser("~")
    if sys.platform == "win32":
        base = os.environ.get("LOCALAPPDATA") or os.path.join(home, "AppData", "Local")
        return os.path.join(base, "np2torch", "Cache")
    if sys.platform == "darwin":
        return os.path.join(home, "Library", "Caches", "np2torch")
    return os.path.join(os.environ.get("XDG_CACHE_HOME") or os.path.join(home, ".cache"), "np2torch")
