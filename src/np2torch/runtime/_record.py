"""A plain base for the runtime's small value classes.

``@dataclass`` costs ~1 ms per class at import, and ``import np2torch.runtime``
is paid by every script that calls a helper once: these classes spell their
``__init__`` and get equality and a readable repr from their ``__slots__``.
"""

from __future__ import annotations


class Record:
    """Equality and repr over ``__slots__``; subclasses define the slots and ``__init__``."""

    __slots__: tuple[str, ...] = ()

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and all(getattr(self, k) == getattr(other, k) for k in self.__slots__)

    def __ne__(self, other: object) -> bool:
        return not self == other

    # Defining __eq__ leaves __hash__ None: records are mutable and unhashable, as dataclasses are.

    def __repr__(self) -> str:
        fields = ", ".join(f"{k}={getattr(self, k)!r}" for k in self.__slots__)
        return f"{type(self).__name__}({fields})"
