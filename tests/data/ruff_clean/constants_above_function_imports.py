"""NumPy imported in functions only, constants above them."""

SCALE = 2.0
NAMES: list[str] = ["a", "b"]
__all__ = ["f"]


def f(x):
    import numpy as np

    return np.exp(x) * SCALE
