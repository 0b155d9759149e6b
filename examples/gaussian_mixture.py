"""A toy Gaussian-mixture E-step: the kind of NumPy/SciPy code np2torch speeds up."""

import numpy as np
from scipy import special
from scipy.special import logsumexp


def log_gaussian(x, mean, var):
    return -0.5 * (np.log(2 * np.pi * var) + (x - mean) ** 2 / var)


def responsibilities(x, means, variances, weights):
    log_p = log_gaussian(x[:, None], means, variances) + np.log(weights)
    return np.exp(log_p - logsumexp(log_p, axis=1, keepdims=True))


def gaussian_cdf(x):
    return 0.5 * (1.0 + special.erf(x / np.sqrt(2.0)))


if __name__ == "__main__":
    import sys

    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 1  # E-steps: `python examples/gaussian_mixture.py 40`
    rng = np.random.default_rng(0)
    x = rng.normal(size=1_000_000)
    for _ in range(steps):
        r = responsibilities(x, np.array([-1.0, 1.0]), np.array([1.0, 0.5]), np.array([0.3, 0.7]))
        cdf = gaussian_cdf(x)
    print(r.sum(axis=0), cdf[:2], gaussian_cdf(np.array([0.0, 1.96])))
