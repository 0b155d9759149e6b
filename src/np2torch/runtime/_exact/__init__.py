"""What keeps a path's result the original's: the error state, the reductions' arguments, SciPy's formula.

A path computes a call (:mod:`.._paths`); what makes the call's outcome the
original's -- beyond its values -- is here, beside the paths rather than inside
them: NumPy's floating-point error reporting at the user's line
(:mod:`.errstate`), which axes and layouts SciPy's reductions reduce and where
they overflow (:mod:`.slices`), and whether the installed SciPy computes the
formula logsumexp's torch and lean paths reproduce (:mod:`.logsumexp_check`).
The original's own function, whatever patch is in force, is found by
:mod:`.._paths.original`.
"""
