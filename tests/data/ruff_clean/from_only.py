import os

from numpy import exp


def f(x):
    return exp(x) + len(os.sep)
