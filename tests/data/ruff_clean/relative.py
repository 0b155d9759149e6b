import numpy as np

from . import sibling
from .other import thing


def f(x):
    return np.exp(x) + sibling.ONE + thing
