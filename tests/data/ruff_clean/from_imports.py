from __future__ import annotations

import math

import numpy as np
from numpy import exp
from scipy.special import logsumexp


def f(x):
    return np.log(x) + exp(x) + logsumexp(x) + math.pi
