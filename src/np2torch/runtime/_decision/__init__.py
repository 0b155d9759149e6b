"""Which path a call takes: the modules that decide, and what they decide from.

* :mod:`.route` -- a call's route, from the call, the settings and the profile
  in force, and the ski rental that imports torch once the savings the profile
  predicts have paid for it;
* :mod:`.model` -- the cost model: curves, profiles, and the size bands and
  margins decided from them (standard library only);
* :mod:`.profile` -- where profiles come from (this machine's, the built-in
  ``runtime/builtin_profile.json``) and which one is in force;
* :mod:`.calibrate` -- what ``np2torch tune`` times, and how.

The decision knows a path only by its record in :mod:`.._paths` (its name,
whether it gives the original's own bits, whether it needs torch, whether its
time scales with the cores, its device, and what the profile says it costs):
no module here lists the paths by name, and no path imports anything here
(tests/test_architecture.py checks both).  Nothing is re-exported: callers
import the module they need.
"""
