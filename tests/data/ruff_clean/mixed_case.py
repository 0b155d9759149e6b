import Cython
import numpy as np
import NumPyTools
import pandas as pd


def f(x):
    return np.exp(x) + pd.NA + Cython.x + NumPyTools.y
