import sys

try:
    import numpy as np
except ImportError:
    sys.exit("needs NumPy")


def f(x):
    return np.exp(x)
