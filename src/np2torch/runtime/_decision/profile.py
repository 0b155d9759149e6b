"""The machine profile: how long each path takes for each function, dtype and size, *here*.

Which path is fastest (the original, torch on one thread, torch on its thread
pool, CUDA) is a fact about the machine -- cores, SIMD level, GPU, memory,
library versions -- not about the function, so it is measured where the code
runs (as FFTW's wisdom or cuDNN's benchmark mode) and stored:

* ``np2torch tune`` measures every served (function, dtype) and writes the
  profile atomically to the user's cache directory, named by a fingerprint of
  what decides the answer (:func:`fingerprint`);
* the built-in profile (``runtime/builtin_profile.json``, a folder up: where
  packaging and the tools name it), measured by ``np2torch tune`` on the
  2-core reference VM, decides where no profile of this machine exists (its pool times scaled to this machine's cores), and is the
  whole truth under ``NP2TORCH_PROFILE=builtin`` (CI).  Nothing is measured
  while a program runs: the profile read at start-up decides every call.

``NP2TORCH_PROFILE`` names a profile file, or ``builtin``.  A missing, corrupt
or foreign profile falls back to the built-in one with one warning, never an
error (not even under a filter that turns warnings into errors).  Reading a profile never imports torch: the fingerprint reads the
versions from the packages' files.
"""

from __future__ import annotations

import contextlib
import importlib.util
import os
import re
import sys
import warnings
import zlib
from typing import Any, Iterator, Mapping

import numpy as np

from .._config import cache_dir
from .._exact.errstate import user_stacklevel
from .._load import usable_cores
from .._state import PROCESS
from .model import Active, Curve, Profile, ProfileError

PROFILE_ENV = "NP2TORCH_PROFILE"
BUILTIN = "builtin"
_BUILTIN_FILE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "builtin_profile.json")


# ---------------------------------------------------------------- the fingerprint

MEASURED_AS = 7
"""What a profile's timings mean, as part of its fingerprint: raised when a path's code changes what
``tune`` measures for it, so that profiles measured before are measured again, not read as this
code's.  2: the pool runs a call's blocks on several threads (1 ran them one after the other), and
logsumexp's original path along a short contiguous axis is SciPy's arithmetic without its overhead.
3: a time is the median of a size's paths timed interleaved (2: the fastest of three, path after
path, which favoured the pool where its margin was thin).  4: the original on every core is measured,
and the import cost is the rental's charge (the cold import after NumPy and SciPy, at least twice the
warm one).  5: every curve reaches the far size (:func:`.calibrate.measure`), where 4's stopped
once the original took 50 ms, and the model kept that size's ratios for every larger call.  6: each call's
result is read once after it (:func:`.calibrate.used`): a result the pool's workers wrote costs its reader more.
7: the input is a ramp over the domain (:func:`.calibrate.make_input`), where 6's were drawn at random: a loop
with branches costs less over a grid than over random values, and so does what another path saves."""


def fingerprint() -> dict[str, Any]:
    """What decides which path is fastest here; computed without importing torch or SciPy."""
    return {
        "cpu": _cpu_model(),
        "machine": _machine_and_system()[0],
        "system": _machine_and_system()[1],
        "cores": usable_cores(),
        # Not OMP_NUM_THREADS or torch's thread count: they change how many of a call's blocks run at once,
        # never which path it takes (the bits are the same on any count: ._paths.blocks). ATEN_CPU_CAPABILITY
        # changes torch's kernels, hence its bits and times.
        "threads_env": {k: os.environ[k] for k in ("ATEN_CPU_CAPABILITY",) if k in os.environ},
        "python": "%d.%d" % sys.version_info[:2],
        "numpy": np.__version__,
        "scipy": package_version("scipy"),
        "torch": package_version("torch"),
        "gpus": _gpu_models(),
        "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
        "measured_as": MEASURED_AS,
    }


def fingerprint_key(print_: Mapping[str, Any]) -> str:
    """A short name for the fingerprint (the file holds the whole fingerprint, compared on reading).

    CRC-32 twice (over the text and its reverse), not SHA-256: ``import hashlib``
    and ``tempfile`` cost ~30 ms, a tenth of a short script's run.
    """
    text = _json().dumps(print_, sort_keys=True, separators=(",", ":")).encode()
    return f"{zlib.crc32(text):08x}{zlib.crc32(text[::-1]):08x}"


def _machine_and_system() -> tuple[str, str]:
    if hasattr(os, "uname"):
        name = os.uname()
        return name.machine, name.sysname
    import platform  # pragma: no cover - Windows (os.uname is POSIX only)

    return platform.machine(), platform.system()


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as handle:
            for line in handle:
                if line.startswith(("model name", "Model", "cpu model")):
                    return line.partition(":")[2].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or platform.machine()


def _gpu_models() -> list[str]:
    # The NVIDIA driver's own files: no CUDA initialization, no torch.
    root = "/proc/driver/nvidia/gpus"
    models: list[str] = []
    try:
        for folder in sorted(os.listdir(root)):
            with open(os.path.join(root, folder, "information"), encoding="utf-8", errors="replace") as handle:
                models.extend(line.partition(":")[2].strip() for line in handle if line.startswith("Model:"))
    except OSError:
        pass
    return models


_VERSION_RE = re.compile(r"""^(?:__version__|version)\s*(?::\s*str\s*)?=\s*['"]([^'"]+)['"]""", re.M)


def package_version(name: str) -> str | None:
    """An installed package's version without importing it (importlib.metadata costs ~0.2 s)."""
    module = sys.modules.get(name)
    version = getattr(module, "__version__", None)
    if module is not None and isinstance(version, str):
        return version
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        for candidate in ("version.py", "_version.py"):
            try:
                with open(os.path.join(folder, candidate), encoding="utf-8", errors="replace") as handle:
                    match = _VERSION_RE.search(handle.read())
            except OSError:
                continue
            if match:
                return match.group(1)
    return "unknown"


# ---------------------------------------------------------------- where profiles live


def default_path(print_: Mapping[str, Any] | None = None) -> str:
    """This machine's profile file."""
    return os.path.join(cache_dir(), f"profile-{fingerprint_key(print_ or fingerprint())}.json")


def read_profile(path: str | os.PathLike[str]) -> Profile:
    try:
        with open(path, encoding="utf-8") as handle:
            data = _json().loads(handle.read())
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise ProfileError(f"{path}: {exc}") from None
    return Profile.from_json(data, os.fspath(path))


def load_builtin() -> Profile:
    """The reference VM's profile shipped with np2torch (an empty one, with a warning, if it is damaged)."""
    try:
        with open(_BUILTIN_FILE, encoding="utf-8") as handle:
            profile = Profile.trusted(_json().loads(handle.read()), BUILTIN)
    except (OSError, ValueError, KeyError, TypeError) as exc:
        _warn(f"np2torch: the built-in profile is unusable ({exc}); every call goes to NumPy/SciPy until `np2torch tune` runs")
        return Profile(BUILTIN, {}, 3.0, 1)
    profile.source = BUILTIN
    return profile


def write_profile(path: str | os.PathLike[str], profile: Profile) -> None:
    """Write atomically (a temporary file renamed over the old one): readers see the old or the new file."""
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    os.makedirs(folder, exist_ok=True)
    import tempfile  # only here: importing it costs ~20 ms, more than reading a profile

    text = _json().dumps(profile.to_json(), indent=1, sort_keys=True) + "\n"
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path) + ".", suffix=".tmp", dir=folder)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


@contextlib.contextmanager
def locked(path: str | os.PathLike[str]) -> Iterator[None]:
    """An advisory lock beside ``path`` for read-modify-write (POSIX ``flock``; elsewhere none: the
    write stays atomic, and a lost update only means one measurement is repeated later)."""
    path = os.fspath(path)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    with open(path + ".lock", "a") as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle.fileno(), fcntl.LOCK_UN)


def merge_into_file(path: str | os.PathLike[str], base: Profile, curves: Mapping[str, Curve], notes: Mapping[str, Any] = {}) -> Profile:
    """Add ``curves``/``notes`` to the profile at ``path`` (re-read under a lock, so concurrent writers' curves survive)."""
    with locked(path):
        return _merge(os.fspath(path), base, curves, notes)


def _merge(path: str, base: Profile, curves: Mapping[str, Curve], notes: Mapping[str, Any]) -> Profile:
    try:
        current = read_profile(path)
        if current.fingerprint != base.fingerprint:
            current = base
    except ProfileError:
        current = base
    merged = Profile(str(path), base.fingerprint, base.import_seconds, base.threads, dict(current.curves), dict(current.notes))
    merged.curves.update(curves)
    merged.notes.update(notes)
    write_profile(path, merged)
    return merged


# ---------------------------------------------------------------- the profile in force


def active() -> Active:
    """The profile in force, loaded on first use (never imports torch).

    No lock is held while it is read (it imports ``json`` and may warn, which runs the program's warning
    handlers): threads that read it at once read the same files, and the first one kept is in force.  One read
    before :meth:`.._state.Process.reload_profile` is not kept after it."""
    found = PROCESS.profile
    if found is None:
        generation = PROCESS.generation
        read = _resolve(os.environ.get(PROFILE_ENV, "").strip())
        with PROCESS.lock:
            if PROCESS.profile is None and PROCESS.generation == generation:
                PROCESS.profile = read
            found = read if PROCESS.profile is None else PROCESS.profile
    return found


def _json() -> Any:
    import json  # on first use: a script whose calls never reach the profile skips it (~3 ms)

    return json


def loaded() -> bool:
    """Whether the profile has been read in this process."""
    return PROCESS.profile is not None


def _resolve(choice: str) -> Active:
    builtin = load_builtin()
    print_ = fingerprint()
    if choice == BUILTIN:
        return Active(None, builtin, None, print_)
    path = os.path.expanduser(choice) if choice else default_path(print_)
    if choice or os.path.exists(path):
        try:
            machine = read_profile(path)
        except ProfileError as exc:
            _warn(f"np2torch: ignoring the profile {exc}; using the built-in one (run `np2torch tune`)")
            return Active(None, builtin, path if not choice else None, print_)
        if machine.fingerprint != print_:
            _warn(
                f"np2torch: the profile {path} was measured on another machine or software stack "
                f"({_difference(machine.fingerprint, print_)}); using the built-in one (run `np2torch tune`)"
            )
            return Active(None, builtin, None, print_)
        return Active(machine, builtin, path, print_)
    return Active(None, builtin, path, print_)


def _difference(old: Mapping[str, Any], new: Mapping[str, Any]) -> str:
    keys = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
    return ", ".join(f"{k}: {old.get(k)!r} -> {new.get(k)!r}" for k in keys[:3]) or "fingerprint differs"


def _warn(message: str) -> None:
    """Warn once per process about the profile, at the user's line, never raising into the user's call.

    The profile is the runtime's housekeeping: a filter that turns warnings
    into errors (``warnings.simplefilter("error")``, pytest's ``filterwarnings
    = error``) must not make a call raise where the original would not, so the
    warning is then shown (``warnings.showwarning``: stderr, or whatever
    records warnings there) instead of raised.
    """
    with PROCESS.lock:
        if PROCESS.profile_warned:
            return
        PROCESS.profile_warned = True
    level = user_stacklevel()
    try:
        warnings.warn(message, RuntimeWarning, stacklevel=level)
    except RuntimeWarning as raised:
        frame = sys._getframe(level - 1)
        warnings.showwarning(raised, RuntimeWarning, frame.f_code.co_filename, frame.f_lineno)
