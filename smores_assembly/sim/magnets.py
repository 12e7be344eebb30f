"""EP magnets of the simulated world: releases, captures (the first qualifying pair in
module order, repeated until none qualifies), snapping a body flush, rigid bodies (a
mixin of :class:`~.world.SimWorld`; its state lives there, no ROS)."""
from __future__ import annotations

import math

import numpy as np

from smores_assembly.geometry import Face, Pose2D, child_pose
from smores_assembly.sim.base import WorldBase
from smores_assembly.sim.faces import capture_qualifies
from smores_assembly.sim.model import FACE_INDEX, FACES, Connection, SimError, SimEvent


class MagnetsMixin(WorldBase):
    """Connections, captures and rigid bodies (``_conns``, ``_face_used``, ``_body``,
    ``_body_size``, ``_capture_dirty``)."""

    def _recompute_bodies(self) -> None:
        super()._recompute_bodies()
        self._kin = None

    def connect_at_start(self, connections) -> None:
        """Start structures (a reconfiguration's ``initial.connections``): connect each
        pair of faces, switch both magnets on, and place every structure's modules exactly
        at their docked poses (breadth-first from the structure's first module in the
        world's order; measured start poses are a few mm off).

        Raises:
            SimError: an unknown module, a face already connected, or a cycle.
        """
        conns = list(connections)
        for c in conns:
            ia = self._i(c.module_a, "connections")
            ib = self._i(c.module_b, "connections")
            for m, f in ((c.module_a, c.face_a), (c.module_b, c.face_b)):
                if (m, f) in self._face_used:
                    raise SimError(f"connections: face {f.value} of {m!r} is already "
                                   f"connected ({self._face_used[(m, f)].describe()})")
            if self._body[ia] == self._body[ib]:
                raise SimError(f"connections: {c.describe()} closes a cycle")
            self._mag[ia, FACE_INDEX[c.face_a]] = True
            self._mag[ib, FACE_INDEX[c.face_b]] = True
            self._add_connection(c.module_a, c.face_a, c.module_b, c.face_b)
        adj: dict[str, list] = {}
        for c in conns:
            adj.setdefault(c.module_a, []).append(c)
            adj.setdefault(c.module_b, []).append(c)
        seen: set[str] = set()
        for m0 in self._ids:
            if m0 in seen or m0 not in adj:
                continue
            seen.add(m0)
            queue = [m0]
            while queue:
                u = queue.pop(0)
                for c in adj[u]:
                    v, fv = c.other(u)
                    if v in seen:
                        continue
                    fu = c.face_a if v == c.module_b else c.face_b
                    goal = child_pose(Pose2D(*self._pose[self._idx[u]]), fu, fv,
                                      self.params.module_width)
                    self._pose[self._idx[v]] = goal.as_tuple()
                    seen.add(v)
                    queue.append(v)
        self._capture_dirty[:] = True
        self._overlap_dirty = True
        self._clearance_movers = None
        self._kin = None

    def _release_connections(self, events: list[SimEvent], t_end: float) -> None:
        """Step phase 1: drop the connections of which a magnet was switched off."""
        if not self._conns:
            return
        released = self._switched_off()
        for c in released:
            self._drop_connection(c)
            events.append(SimEvent("disconnected", t_end, (c.module_a, c.module_b),
                                   (c.face_a, c.face_b)))
            # a freed face may now capture another one
            self._capture_dirty[[self._idx[c.module_a], self._idx[c.module_b]]] = True
        if released:
            self._recompute_bodies()
            self._overlap_dirty = True

    def _capture(self, moved: np.ndarray, events: list[SimEvent], t_end: float) -> None:
        """Connect face pairs that satisfy the capture rule, the first qualifying pair in
        module order first, until none qualifies. Only pairs with a module that moved,
        switched magnets, tilted, lost a connection or was snapped can newly qualify."""
        p = self.params
        w = p.module_width
        dirty = self._capture_dirty | moved
        self._capture_dirty = np.zeros(len(self._ids), dtype=bool)
        has_mag = np.asarray(self._mag.any(axis=1))
        mags = has_mag.nonzero()[0]
        if len(mags) < 2:
            return
        limit = w + p.capture_range + p.capture_lateral_max + 0.5 * w * math.sin(
            p.capture_angle_max) + 1e-6

        def pairs_of(active: np.ndarray) -> set[tuple[int, int]]:
            xy = self._pose
            dx = xy[active, 0, None] - xy[None, mags, 0]
            dy = xy[active, 1, None] - xy[None, mags, 1]
            close = dx * dx + dy * dy < limit * limit
            out = set()
            for ai, bj in zip(*np.nonzero(close)):
                a_i, b_i = int(active[ai]), int(mags[bj])
                if a_i != b_i:
                    out.add((min(a_i, b_i), max(a_i, b_i)))
            return out

        active = (dirty & has_mag).nonzero()[0]
        if len(active) == 0:
            return
        candidates = pairs_of(active)
        snapped = True
        while snapped:
            snapped = False
            for a_i, b_i in sorted(candidates):
                members = self._capture_pair(a_i, b_i, moved, events, t_end)
                if members is None:
                    continue
                # snapped modules moved: their pairs are candidates too; start again
                if members:
                    m = np.array(members)
                    candidates |= pairs_of(m[has_mag[m]])
                snapped = True
                break

    def _capture_pair(self, a_i: int, b_i: int, moved: np.ndarray,
                      events: list[SimEvent], t_end: float) -> list[int] | None:
        """Connect the first qualifying face pair of modules ``a_i < b_i`` (faces in
        :data:`FACES` order); returns the snapped modules, None when no pair qualifies."""
        p = self.params
        a, b = self._ids[a_i], self._ids[b_i]
        if self._exempt(a, b):
            return None
        for fa in np.flatnonzero(self._mag[a_i]):
            face_a = FACES[fa]
            if (a, face_a) in self._face_used:
                continue
            if face_a is Face.TOP and abs(self._joint[a_i, 1]) > p.capture_angle_max:
                continue
            for fb in np.flatnonzero(self._mag[b_i]):
                face_b = FACES[fb]
                if (b, face_b) in self._face_used:
                    continue
                if face_b is Face.TOP and abs(self._joint[b_i, 1]) > p.capture_angle_max:
                    continue
                if not capture_qualifies(self._pose[a_i], int(fa), self._pose[b_i], int(fb),
                                         p):
                    continue
                members = self._connect(a_i, face_a, b_i, face_b, moved)
                c = Connection.make(a, face_a, b, face_b)
                events.append(SimEvent("connected", t_end, (c.module_a, c.module_b),
                                       (c.face_a, c.face_b)))
                return members
        return None

    def _connect(self, a_i: int, face_a: Face, b_i: int, face_b: Face,
                 moved: np.ndarray) -> list[int]:
        """Connect two faces; when they belong to different bodies, snap the moving side
        (carried, else smaller, else the one that moved, else ``b``) rigidly to its docked
        pose. Returns the indices of the modules that were moved by the snap."""
        a, b = self._ids[a_i], self._ids[b_i]
        members: list[int] = []
        if self._body[a_i] != self._body[b_i]:
            # choose the side that snaps
            if a in self._carrier and b not in self._carrier:
                mover = a_i
            elif b in self._carrier and a not in self._carrier:
                mover = b_i
            elif self._body_size[a_i] != self._body_size[b_i]:
                mover = a_i if self._body_size[a_i] < self._body_size[b_i] else b_i
            elif moved[a_i] != moved[b_i]:
                mover = a_i if moved[a_i] else b_i
            else:
                mover = b_i
            if mover == a_i:
                fixed, f_fixed, f_move = b_i, face_b, face_a
            else:
                fixed, f_fixed, f_move = a_i, face_a, face_b
            fp = self._pose[fixed]
            goal = child_pose(Pose2D(*fp), f_fixed, f_move, self.params.module_width)
            cur = self._pose[mover]
            # rigid transform T = goal * cur^-1 applied to the mover's whole body
            dyaw = goal.yaw - cur[2]
            c, s = math.cos(dyaw), math.sin(dyaw)
            idx = np.flatnonzero(self._body == self._body[mover])
            rel = self._pose[idx, :2] - cur[:2]
            self._pose[idx, 0] = goal.x + c * rel[:, 0] - s * rel[:, 1]
            self._pose[idx, 1] = goal.y + s * rel[:, 0] + c * rel[:, 1]
            self._pose[idx, 2] = (self._pose[idx, 2] + dyaw + math.pi) % (
                2 * math.pi) - math.pi
            self._pose[mover, 2] = goal.yaw
            for mi in idx:
                m = self._ids[mi]
                if m in self._carrier:  # handed over to the structure
                    self._release(self._carrier[m])
                self._wheel[mi] = 0.0
            members = [int(i) for i in idx]
        self._overlap_dirty = True
        self._clearance_movers = None
        self._add_connection(a, face_a, b, face_b)
        return members
