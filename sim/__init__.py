"""Sluice's simulator: the scheduling core on a virtual clock over workload traces.

    result = simulate(load_swf(path), SimOptions(policy="easy"))

It drives the very same ``decide`` / ``evolve`` / ``schedule`` as the shard agent; only the
node daemons and the clock are simulated.
"""

from sim.engine import SimOptions, SimResult, Simulation, simulate
from sim.gpu import load_gpu_trace
from sim.swf import load_swf
from sim.workload import TraceJob, Workload

__all__ = [
    "SimOptions",
    "SimResult",
    "Simulation",
    "TraceJob",
    "Workload",
    "load_gpu_trace",
    "load_swf",
    "simulate",
]
