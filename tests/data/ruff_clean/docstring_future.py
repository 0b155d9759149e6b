#!/usr/bin/env python3
# A header comment.
"""A module docstring."""

from __future__ import annotations

import numpy as np

CONSTANT = 3


def f(x):
    return np.exp(x) * CONSTANT
