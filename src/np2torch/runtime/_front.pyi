# The C front of a helper (_front.c): its interface, for type checkers.
import inspect
from contextvars import ContextVar
from typing import Any, Callable, Dict, FrozenSet, Optional

class Front:
    original: Optional[Callable[..., Any]]
    """The original the front passes calls to (None: every call goes to the Python function)."""
    ledger: Optional[Any]
    """The helper's ledger (._decision.ledger.Ledger) of plain calls past the floor that take the original (None: none
    is passed)."""
    __signature__: inspect.Signature
    @property
    def python(self) -> Callable[..., Any]:
        """The helper's Python function, which decides every other call."""
    def __init__(
        self,
        python: Callable[..., Any],
        floors: Dict[Any, int],
        loops: Optional[Dict[Any, Any]],
        scoped: ContextVar[Any],
        process: object,
        ndarray: type,
        scalars: FrozenSet[type],
    ) -> None: ...
    def __call__(self, *args: Any, **kwargs: Any) -> Any: ...
