"""An edge of the target tree and a magnetic connection between two faces (no ROS imports).

Their own module so that :mod:`smores_assembly.scenario` (which validates a target with the
tree algorithms and a start structure's connections), :mod:`smores_assembly.topology` (the
tree algorithms) and the simulated world (:mod:`smores_assembly.sim`) use them without
importing each other.
"""
from __future__ import annotations

from dataclasses import dataclass

from smores_assembly.errors import InputError
from smores_assembly.geometry import Face


@dataclass(frozen=True)
class Edge:
    """One edge of the target tree: ``parent_face`` of ``parent`` mates ``child_face`` of
    ``child``. "parent"/"child" only name the two sides; the root search picks the root."""

    parent: str
    parent_face: Face
    child: str
    child_face: Face

    def other(self, node: str) -> tuple[str, Face, Face]:
        """Seen from ``node``: ``(neighbour, node's face, neighbour's face)``.

        Raises:
            InputError: ``node`` is not an end of this edge.
        """
        if node == self.parent:
            return self.child, self.parent_face, self.child_face
        if node == self.child:
            return self.parent, self.child_face, self.parent_face
        raise InputError(f"node {node!r} is not on edge {self.parent!r}-{self.child!r}")

    def to_dict(self) -> dict[str, str]:
        """The edge in scenario-file form (face names as strings)."""
        return {"parent": self.parent, "parent_face": self.parent_face.value,
                "child": self.child, "child_face": self.child_face.value}


@dataclass(frozen=True, order=True)
class Connection:
    """A magnetic connection between ``face_a`` of ``module_a`` and ``face_b`` of
    ``module_b``; normalised so that ``(module_a, face_a) < (module_b, face_b)``."""

    module_a: str
    face_a: Face
    module_b: str
    face_b: Face

    @staticmethod
    def make(module_a: str, face_a: Face, module_b: str, face_b: Face) -> "Connection":
        """The normalised connection of two (module, face) ends given in any order."""
        a, b = (module_a, Face.parse(face_a).value), (module_b, Face.parse(face_b).value)
        if b < a:
            a, b = b, a
        return Connection(a[0], Face(a[1]), b[0], Face(b[1]))

    def other(self, module: str) -> tuple[str, Face]:
        """The far end (module, face) seen from ``module``."""
        return (self.module_b, self.face_b) if module == self.module_a else (
            self.module_a, self.face_a)

    def describe(self) -> str:
        """``module_a.FACE-module_b.FACE``, e.g. ``m0.TOP-m1.BOTTOM``."""
        return (f"{self.module_a}.{self.face_a.value}-{self.module_b}.{self.face_b.value}")

    def to_list(self) -> list[str]:
        """The connection in scenario-file form: ``["m0.TOP", "m1.BOTTOM"]``."""
        return [f"{self.module_a}.{self.face_a.value}", f"{self.module_b}.{self.face_b.value}"]
