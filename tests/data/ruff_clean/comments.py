import os

# NumPy, for the arrays
import numpy as np

# SciPy, for the special functions
import scipy.special


def f(x):
    return np.exp(x) + scipy.special.expit(x) + len(os.sep)
