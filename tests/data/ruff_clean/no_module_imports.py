def f(x):
    import numpy as np

    return np.exp(x)
