import numpy as np


def f(x):
    return np.exp(x)


def g(x):
    return np.log(x)
