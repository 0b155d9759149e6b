"""Runtime configuration: which device the helpers use and from which size on.

Two sources, read in this order on every dispatch decision:

1. the innermost active :func:`using` block of the *current context*
   (a :class:`contextvars.ContextVar`, so threads and asyncio tasks do not see
   each other's blocks; note that before Python 3.14 a new thread starts with an
   empty context and therefore sees only the process-wide settings);
2. the process-wide settings, set from ``NP2TORCH_DEVICE`` / ``NP2TORCH_MIN_SIZE``
   at import and changed by :func:`configure`.

``min_size=None`` means "the machine profile decides" (:mod:`._decide`); a
number replaces the profile: torch from that size on.
"""

from __future__ import annotations

import contextlib
import numbers
import os
import re
import sys
import threading
from contextvars import ContextVar
from typing import Any, Iterator, Mapping

DEVICE_ENV = "NP2TORCH_DEVICE"
MIN_SIZE_ENV = "NP2TORCH_MIN_SIZE"

_CUDA_RE = re.compile(r"cuda(?::(\d+))?\Z")

DEVICES_HELP = "cpu, cuda, cuda:N, auto or numpy"


class RuntimeSettings:
    """The runtime's settings: ``device`` (``auto``: the fastest measured path | ``cpu`` | ``cuda`` |
    ``cuda:N`` | ``numpy``: off) and ``min_size`` (a dispatch threshold in elements for every
    helper; ``None``: the machine profile decides).  Immutable; ``gate`` is the size gate the
    helpers read on every call (a plain attribute, not a property)."""

    __slots__ = ("device", "min_size", "gate")
    device: str
    min_size: int | None
    gate: int | None

    def __init__(self, device: str = "auto", min_size: int | None = None) -> None:
        object.__setattr__(self, "device", device)
        object.__setattr__(self, "min_size", min_size)
        object.__setattr__(self, "gate", _GATE_OFF if device == "numpy" else min_size)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"RuntimeSettings is immutable; use configure() or using() to change {name!r}")

    def __eq__(self, other: object) -> bool:
        if type(other) is not RuntimeSettings:
            return NotImplemented
        return (self.device, self.min_size) == (other.device, other.min_size)

    def __hash__(self) -> int:
        return hash((self.device, self.min_size))

    def __repr__(self) -> str:
        return f"RuntimeSettings(device={self.device!r}, min_size={self.min_size!r})"

    def replace(self, **changes: Any) -> RuntimeSettings:
        """A copy with ``changes`` applied."""
        return RuntimeSettings(changes.get("device", self.device), changes.get("min_size", self.min_size))


Settings = RuntimeSettings
"""The name before 0.2 (kept: user code may name it)."""


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


def _settings_from_env(environ: Mapping[str, str]) -> Settings:
    device = environ.get(DEVICE_ENV, "").strip()
    min_size = environ.get(MIN_SIZE_ENV, "").strip()
    return Settings(
        device=parse_device(device, DEVICE_ENV) if device else "auto",
        min_size=parse_min_size(min_size, MIN_SIZE_ENV) if min_size else None,
    )


class _ProcessSettings:
    """The process-wide settings; replaced whole, so readers never see half an update."""

    lock = threading.Lock()
    value: Settings = _settings_from_env(os.environ)


_CONTEXT_SETTINGS: ContextVar[Settings | None] = ContextVar("np2torch_runtime_settings", default=None)


# For the helpers' hot path, which inlines current_settings():
#   scoped = SETTINGS_VAR.get(); settings = PROCESS_SETTINGS.value if scoped is None else scoped
SETTINGS_VAR = _CONTEXT_SETTINGS
PROCESS_SETTINGS = _ProcessSettings


def current_settings() -> Settings:
    """The settings in force here: the innermost :func:`using` block, else the process-wide ones."""
    scoped = _CONTEXT_SETTINGS.get()
    return _ProcessSettings.value if scoped is None else scoped


_KEEP: object = object()


def _updated(base: Settings, device: object, min_size: object) -> Settings:
    changes: dict[str, Any] = {}
    if device is not _KEEP:
        changes["device"] = parse_device(device)
    if min_size is not _KEEP:
        changes["min_size"] = parse_min_size(min_size)
    return base.replace(**changes)


def configure(device: str | object = _KEEP, min_size: int | None | object = _KEEP) -> Settings:
    """Change the process-wide settings; arguments left out keep their value.

    ``device``: ``"auto"`` (the default: the path the machine profile measured
    fastest, CUDA included where ``np2torch tune`` measured it), ``"cpu"`` (torch
    on the host), ``"cuda"``/``"cuda:N"`` or ``"numpy"`` (off: every call goes to
    NumPy/SciPy).
    ``min_size``: the dispatch threshold in elements for every helper (0 forces
    the torch path); ``None`` restores the measured per-function defaults.
    Returns the previous settings.  Active :func:`using` blocks still win.
    """
    with _ProcessSettings.lock:
        previous = _ProcessSettings.value
        _ProcessSettings.value = _updated(previous, device, min_size)
    return previous


def reset_from_environment() -> Settings:
    """Re-read ``NP2TORCH_DEVICE``/``NP2TORCH_MIN_SIZE``; returns the new process-wide settings."""
    with _ProcessSettings.lock:
        _ProcessSettings.value = _settings_from_env(os.environ)
        return _ProcessSettings.value


@contextlib.contextmanager
def using(device: str | object = _KEEP, min_size: int | None | object = _KEEP) -> Iterator[Settings]:
    """Override the settings inside a ``with`` block, in this thread/task only.

    Same arguments as :func:`configure`; yields the settings in force inside.
    """
    settings = _updated(current_settings(), device, min_size)
    token = _CONTEXT_SETTINGS.set(settings)
    try:
        yield settings
    finally:
        _CONTEXT_SETTINGS.reset(token)


def device_kind(device: str) -> str:
    """``cpu``/``cuda``/``auto``/``numpy`` without the CUDA index."""
    return "cuda" if device.startswith("cuda") else device
