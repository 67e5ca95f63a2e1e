"""A simulated replica: the probe executor of ``executor: simulated`` and ``faultsense simulate``.

* :mod:`.latency` -- the latency model (the paper's, plus optional production effects).
* :mod:`.simulator` -- :class:`~.simulator.SimulatedReplica`, a probe executor over that model.
* :mod:`.scenario` -- a scenario file (``faultsense simulate --scenario``) parsed into a
  replica, its cover and its options.
"""
