import matplotlib
import nltk
import numpy as np


def f(x):
    return np.exp(x) + matplotlib.x + nltk.y
