"""Only function-level imports, below a docstring."""


@staticmethod
def f(x):
    from scipy.special import erf

    return erf(x)
