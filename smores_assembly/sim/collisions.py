"""Collisions of the simulated world: motions that would deepen an overlap are blocked,
overlaps that are no face contact are reported once per contact (a mixin of
:class:`~.world.SimWorld`; its state lives there, no ROS)."""
from __future__ import annotations

import math

import numpy as np

from smores_assembly.geometry import square_overlap, wrap_angle
from smores_assembly.sim.faces import facing_push, is_face_contact
from smores_assembly.sim.model import SimEvent


class CollisionsMixin:
    """Motion resolution against the other modules and collision bookkeeping
    (``_collisions``, the broad-phase skip ``_clearance`` / ``_clearance_movers``,
    ``_overlap_dirty``)."""

    def _exempt(self, a: str, b: str) -> bool:
        """True when a and b never collide (helper and its load)."""
        return self._carrier.get(a) == b or self._carrier.get(b) == a

    def _is_face_contact(self, pa, pb, depth: float) -> bool:
        return is_face_contact(pa, pb, depth, self.params)

    def _units(self, moving: np.ndarray) -> dict[int, list[int]]:
        """Moving units by unit index (a helper's index; its load moves with it)."""
        unit_of = np.arange(len(self._ids))
        for m, h in self._carrier.items():
            unit_of[self._idx[m]] = self._idx[h]
        units: dict[int, list[int]] = {}
        for u in sorted(set(unit_of[np.flatnonzero(moving)].tolist())):
            unit = [u] + ([self._idx[self._carry[self._ids[u]][0]]]
                          if self._ids[u] in self._carry else [])
            units[u] = [i for i in unit if moving[i]]
        return units

    def _unit_overlaps(self, unit: list[int], candidates, prop: np.ndarray):
        """Overlaps the proposed poses ``prop`` of ``unit`` would make: ``(ok, seen,
        blocks)``; ``ok`` is False when some pair overlaps more than now (beyond
        ``overlap_tolerance``), listed in ``blocks`` as (i, j, key, face contact, depth);
        ``seen`` = pairs left overlapping no deeper than now (allowed)."""
        p = self.params
        w = p.module_width
        ok = True
        seen = []
        blocks = []
        for i in unit:
            a = self._ids[i]
            pa_new = tuple(prop[i])
            pa_old = tuple(self._pose[i])
            for j in candidates(i):
                if j in unit:
                    continue
                b = self._ids[j]
                if self._exempt(a, b):
                    continue
                pb = tuple(self._pose[j])
                dn = square_overlap(pa_new, pb, w)
                if dn <= p.overlap_tolerance:
                    continue
                key = (a, b) if a < b else (b, a)
                do = square_overlap(pa_old, pb, w)
                if dn <= do + 1e-12:
                    seen.append(key)
                    continue
                ok = False
                blocks.append((i, j, key, self._is_face_contact(pa_new, pb, dn), dn))
        return ok, seen, blocks

    def _try_unit(self, u: int, unit: list[int], candidates, prop: np.ndarray,
                  new_rel: dict[str, float], moved: np.ndarray, blocked_pairs: dict,
                  touching: set) -> None:
        """Apply the proposed poses of moving unit ``u`` (module indices ``unit``) unless that
        makes a module of it overlap another module (among ``candidates(i)``) more than
        before: then its wheels stop and the pairs go to ``blocked_pairs`` (key -> (depth,
        face contact)) — except
        when every such overlap is a face contact and ``face_contact_slide`` is on: then the
        unit is pushed back out along the pressed faces' normals and slides (flush slides
        are legal motion). Pairs left overlapping by an allowed motion go to ``touching``."""
        p = self.params
        ok, seen, blocks = self._unit_overlaps(unit, candidates, prop)
        if not ok and p.face_contact_slide and all(fc for _, _, _, fc, _ in blocks):
            # Flush slide: push the unit back out of the faces it presses against, along
            # those faces' normals; accepted when that overlaps nothing more.
            slid = self._slid(unit, blocks, prop)
            ok2, seen2, _ = self._unit_overlaps(unit, candidates, slid)
            if not ok2 and len(unit) == 1:
                # A slot (faces pressed on both sides): the walls square the module up --
                # turned to their orientation (within capture_angle_max), then pushed out.
                sq = self._squared(unit[0], blocks, prop)
                if sq is not None:
                    ok3, _, blocks3 = self._unit_overlaps(unit, candidates, sq)
                    if not ok3 and all(fc for _, _, _, fc, _ in blocks3):
                        sq = self._slid(unit, blocks3, sq)
                    ok2, seen2, _ = self._unit_overlaps(unit, candidates, sq)
                    slid = sq
            if ok2 and math.hypot(*(slid[unit[0], :2] - prop[unit[0], :2])) \
                    <= p.contact_penetration_max:
                prop[unit] = slid[unit]
                ok, seen, blocks = True, seen2, []
        for _, _, key, fc, dn in blocks:
            if key not in blocked_pairs or blocked_pairs[key][0] < dn:
                blocked_pairs[key] = (dn, fc)
        if ok:
            touching.update(seen)
            for i in unit:
                self._pose[i] = prop[i]
                moved[i] = True
            h = self._ids[u]
            if h in new_rel and h in self._carry:
                self._carry[h][2] = new_rel[h]
        else:
            self._wheel[unit] = 0.0

    def _slid(self, unit: list[int], blocks, prop: np.ndarray) -> np.ndarray:
        """``prop`` with ``unit`` pushed back out of the faces it presses against (along
        their normals, :func:`facing_push`), a copy."""
        p = self.params
        push = np.zeros(2)
        for i, j, _, _, _ in blocks:
            d, nx, ny = facing_push(tuple(prop[i]), tuple(self._pose[j]), p.module_width)
            push += max(0.0, d + 0.5 * p.overlap_tolerance) * np.array([nx, ny])
        slid = prop.copy()
        slid[unit, 0] += push[0]
        slid[unit, 1] += push[1]
        return slid

    def _squared(self, i: int, blocks, prop: np.ndarray) -> np.ndarray | None:
        """``prop`` with module ``i`` turned to the nearest quarter turn of the modules it
        presses against (all of one orientation, within ``capture_angle_max``), a copy;
        None when they differ or the turn is larger."""
        p = self.params
        yaws = [float(self._pose[j][2]) for _, j, _, _, _ in blocks]
        y0 = yaws[0]
        if any(abs(wrap_angle(4.0 * (y - y0))) > 4.0 * 1e-3 for y in yaws):
            return None
        q = round(wrap_angle(float(prop[i][2]) - y0) / (0.5 * math.pi))
        target = wrap_angle(y0 + 0.5 * math.pi * q)
        if abs(wrap_angle(target - float(prop[i][2]))) > p.capture_angle_max:
            return None
        sq = prop.copy()
        sq[i, 2] = target
        return sq

    def _resolve_motion(self, moving: np.ndarray, prop: np.ndarray,
                        new_rel: dict[str, float], moved: np.ndarray,
                        blocked_pairs: dict, touching: set) -> None:
        """Apply the proposed poses of the moving units, blocking the ones that would
        overlap another module more than before (see the module docstring). Units that
        cannot reach any module in this step (broad phase) are applied without checks."""
        w = self.params.module_width
        reach = w * math.sqrt(2.0) + 1e-9
        cur = self._pose
        # Verlet-list style skip: while the movers' accumulated displacement stays below
        # the clearance measured at the last full broad phase (same set of movers), no
        # mover can have come within reach of any module
        step_max = float(np.abs(prop[:, :2] - cur[:, :2]).max()) * math.sqrt(2.0)
        if (self._clearance_movers is not None
                and (self._clearance_movers == moving).all()
                and self._clearance - 2.0 * step_max > 0.0):
            self._clearance -= 2.0 * step_max
            self._pose[moving] = prop[moving]
            moved |= moving
            for h in new_rel:
                if moving[self._idx[h]]:
                    self._carry[h][2] = new_rel[h]
            return
        mv = moving.nonzero()[0]
        disp = np.hypot(prop[:, 0] - cur[:, 0], prop[:, 1] - cur[:, 1])
        # conservative broad phase on the current positions: two squares can only overlap
        # when their centres are within w*sqrt(2) (+ what either moves in this step)
        dx = cur[mv, 0, None] - cur[None, :, 0]
        dy = cur[mv, 1, None] - cur[None, :, 1]
        lim = reach + disp[mv, None] + disp[None, :]
        d = np.sqrt(dx * dx + dy * dy)
        d[np.arange(len(mv)), mv] = np.inf
        near = d < lim
        hit_rows = near.any(axis=1)
        # clearance for the following steps (measured after this step's motion bound)
        self._clearance = float((d - lim).min()) if d.size else math.inf
        self._clearance_movers = moving.copy()
        units = self._units(moving)
        unit_of = {i: u for u, members in units.items() for i in members}
        hit_units = {unit_of[int(i)] for i in mv[hit_rows]}
        # units out of reach of every module cannot overlap anything: apply them first
        for u, unit in units.items():
            if u not in hit_units:
                self._pose[unit] = prop[unit]
                moved[unit] = True
                h = self._ids[u]
                if h in new_rel and h in self._carry:
                    self._carry[h][2] = new_rel[h]
        row_of = {int(i): k for k, i in enumerate(mv)}
        for u in sorted(hit_units):
            self._try_unit(u, units[u], lambda i: np.flatnonzero(near[row_of[i]]), prop,
                           new_rel, moved, blocked_pairs, touching)

    def _collision_events(self, blocked: dict[tuple[str, str], tuple[float, bool]],
                          touching: set, events: list[SimEvent], t_end: float) -> None:
        """Collision events of blocked motions that are not face contacts, of overlaps left
        by allowed motions (``touching``) and, after pose changes other than checked
        motions (start, snaps, LIFT, RELEASE, releases), of every existing overlap."""
        w = self.params.module_width
        if not blocked and not touching and not self._collisions and not self._overlap_dirty:
            return
        found: dict[tuple[str, str], float] = {}
        for key, (depth, face_contact) in blocked.items():
            if not face_contact:
                found[key] = depth
        for a, b in touching:
            self._overlap_found(self._idx[a], self._idx[b], found)
        n = len(self._ids)
        if self._overlap_dirty and n > 1:
            self._overlap_dirty = False
            xy = self._pose
            dx = xy[:, 0, None] - xy[None, :, 0]
            dy = xy[:, 1, None] - xy[None, :, 1]
            close = np.triu(dx * dx + dy * dy < 2.0 * w * w, k=1)
            close &= self._body[:, None] != self._body[None, :]
            for i, j in zip(*np.nonzero(close)):
                self._overlap_found(int(i), int(j), found)
        self._collision_bookkeeping(found, blocked, events, t_end)

    def _overlap_found(self, i: int, j: int, found: dict) -> None:
        """Add pair (i, j) to ``found`` when it overlaps and is not a face contact."""
        a, b = self._ids[i], self._ids[j]
        if self._body[i] == self._body[j] or self._exempt(a, b):
            return
        pa, pb = tuple(self._pose[i]), tuple(self._pose[j])
        d = square_overlap(pa, pb, self.params.module_width)
        if d > self.params.overlap_tolerance and not self._is_face_contact(pa, pb, d):
            key = (a, b) if a < b else (b, a)
            found[key] = max(found.get(key, 0.0), d)

    def _collision_bookkeeping(self, found: dict, blocked: dict, events: list[SimEvent],
                               t_end: float) -> None:
        """Report the overlaps in ``found`` (key -> depth) that are new contacts; end the
        contacts that cleared (apart by ``collision_clear_distance``, same body, exempt)."""
        w = self.params.module_width
        for key, depth in sorted(found.items()):
            if key not in self._collisions:
                events.append(SimEvent("collision", t_end, key, None, float(depth)))
            self._collisions[key] = depth
        for key in list(self._collisions):
            if key in found or key in blocked:
                continue
            i, j = self._idx[key[0]], self._idx[key[1]]
            same = self._body[i] == self._body[j]
            d = square_overlap(tuple(self._pose[i]), tuple(self._pose[j]), w)
            if same or self._exempt(*key) or -d > self.params.collision_clear_distance:
                del self._collisions[key]
