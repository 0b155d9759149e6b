"""np2torch: find NumPy/SciPy calls that torch computes faster and rewrite them to exact drop-in helpers."""

__version__ = "0.1.0"
