"""Multi-agent path finding (MAPF) on a 4-connected grid in space-time (no ROS imports).

Model (the standard one of the MAPF literature, e.g. Stern et al., "Multi-Agent Pathfinding:
Definitions, Variants, and Benchmarks", SoCS 2019):

* time is discrete; at each step an agent moves to a free 4-neighbour cell or waits;
* a **vertex conflict**: two agents in one cell at one time step;
* an **edge (swap) conflict**: two agents exchange their cells in one step;
* an agent that reached its goal stays there forever (it still blocks it); its cost is the
  time step at which it arrives for good; the solution cost is the **sum of costs**.

Optionally the search is *k-robust* (Atzmon et al., "Robust Multi-Agent Path Finding",
SoCS 2018): two agents may not occupy one cell within ``k`` steps of each other. ``k = 1``
forbids "following" (entering a cell in the step its occupant leaves it), which keeps
physical modules of a given footprint apart during the transitions as well
(:mod:`smores_assembly.navigation.stage` uses it).

Algorithms:

* :func:`solve` with ``algorithm="cbs"``: Conflict-Based Search (Sharon et al., "Conflict-
  based search for optimal multi-agent pathfinding", AIJ 2015), optimal sum of costs; the
  low level is space-time A* with the true-distance heuristic; ties between equally cheap
  paths are broken by the number of conflicts with the other agents' paths (the conflict
  avoidance table of Sec. 4.3 of that paper).
* ``algorithm="ecbs"``: Enhanced CBS (Barer et al., "Suboptimal Variants of the Conflict-
  Based Search Algorithm for the Multi-Agent Pathfinding Problem", SoCS 2014, Sec. 5):
  focal search on both levels with suboptimality factor ``w`` (cost <= w * optimum),
  focal heuristic = number of conflicts.
* ``algorithm="prioritized"``: prioritized planning (Silver, "Cooperative Pathfinding",
  AIIDE 2005) over a few agent orders; incomplete (the fallback when ``k >= 2``).
* ``algorithm="lacam"``: LaCAM with a PIBT configuration generator (Okumura, AAAI 2023;
  PIBT: Okumura et al., AIJ 2022; swap rule of LaCAM3, AAMAS 2024): complete and fast on
  dense or large instances (milliseconds for 16 agents on 8x8, well under a second for 200
  agents on 32x32), no bound on the cost; ``k`` 0 or 1. Its first schedule is refined by
  best responses and a large neighbourhood search bounded by counts only. It is also the
  fallback of CBS/ECBS (``fallback=True``) when they hit a bound; when it has generated every
  reachable configuration without meeting the goals, the instance is proven unsolvable.
* CBS splits on cardinal conflicts first (Boyarski et al., "ICBS", IJCAI 2015), detected
  with multi-valued decision diagrams; ECBS may first try a tighter factor
  (``tight_w``); ECBS and prioritized schedules are then shortened by best responses
  (each agent replanned optimally against all others, kept only when shorter).

Every search is bounded (high-level nodes or configurations, low-level expansions, wall time:
the only bound that depends on the machine's load; ``time_limit_s=math.inf`` leaves it out)
and raises
:class:`SearchLimitError` ("no solution found within the budget: ...") when a bound is hit.
Unsolvable inputs are detected before the search (:func:`check_instance`):
:class:`DuplicateGoalError`, :class:`DuplicateStartError`, :class:`InvalidCellError`
(outside the map or in an obstacle), :class:`UnreachableGoalError` (BFS from each goal),
:class:`InfeasibleError` ("proven infeasible: ...", agents that must pass each other in a
corridor, :func:`corridor_passing`).

:func:`validate_schedule` is an independent checker of a schedule (it shares no code with
the search).

Modules: :mod:`.grid` (map), :mod:`.instance` (input checks), :mod:`.lowlevel` (budget,
constraints, space-time focal/A* search), :mod:`.conflicts` (conflict detection, MDDs),
:mod:`.cbs` (CBS/ECBS), :mod:`.prioritized`, :mod:`.lacam`, :mod:`.improve` (post-optimisation),
:mod:`.solve` (entry point), :mod:`.validate` (independent checker), :mod:`.errors`.
"""
from smores_assembly.navigation.mapf.errors import (DuplicateGoalError, DuplicateStartError,
                                                    InfeasibleError, InvalidCellError,
                                                    NavigationError,
                                                    NoSolutionError, SearchLimitError,
                                                    UnreachableGoalError)
from smores_assembly.navigation.mapf.grid import Cell, Grid
from smores_assembly.navigation.mapf.instance import check_instance, corridor_passing
from smores_assembly.navigation.mapf.solve import ALGORITHMS, Solution, solve
from smores_assembly.navigation.mapf.validate import validate_schedule

__all__ = ["ALGORITHMS", "Cell", "DuplicateGoalError", "DuplicateStartError", "Grid",
           "InfeasibleError", "InvalidCellError", "NavigationError", "NoSolutionError",
           "SearchLimitError",
           "Solution", "UnreachableGoalError", "check_instance", "corridor_passing", "solve",
           "validate_schedule"]
