"""An edge of the target tree (no ROS imports).

Its own module so that :mod:`smores_assembly.scenario` (which validates a target with the
tree algorithms) and :mod:`smores_assembly.topology` (the tree algorithms) both use it
without importing each other.
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
