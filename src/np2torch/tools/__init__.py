"""Tools around the runtime and the docs: ``np2torch bench``, ``np2torch tune``, ``np2torch vendor``, and the
generators of the runtime's stub (:mod:`.stubs`) and docs/rules.md (:mod:`.docs`)."""
