"""Offline cover searches that rebuild the stored tables of ``faultsense_pipelines/cover/data/``.

Not part of the installed package (the product only loads the tables, through
``faultsense_pipelines.cover.table``); they call only the public API of
``faultsense_pipelines.cover``. Run from the repository root; the numba ones need the
``[search]`` extra (``pip install -e '.[search]'``):

==================================================== ============== ===========================
command                                              table          cost (one core)
==================================================== ============== ===========================
``python -m tools.cover_search.small``               small, holey   ~20 min (+ targets, holey)
``python -m tools.cover_search.holey``               holey          ~6 min
``python -m tools.cover_search.resolvable``          resolvable     ~30 min
``python -m tools.cover_search.cyclic_search --write`` cyclic       minutes, numba
``python -m tools.cover_search.orbit_search``        large          ~70 s, numba
``python -m tools.cover_search.class_search --write`` large (n=300) ~100 s, numba
``python -m tools.cover_search.schedule_anneal --all --write`` large ~35 min, numba
==================================================== ============== ===========================

``tests/test_cover_search_tools.py`` reruns recipes and compares them with the stored entries
value for value (the cheap ones in the default tier, the rest under ``-m search``).
"""
