"""Standard library, third party and first party, one blank line between them."""

import os
import sys

import numpy as np
import scipy

from mypkg import helpers


def f(x):
    return np.exp(x) + len(sys.argv) + len(os.sep) + helpers.ONE + scipy.pi
