"""The SMORES-EP module description (``description/smores_ep.urdf``) read into numbers.

The URDF is the one source of the module's physical description (geometry, masses,
inertias, joint limits, friction in its ``<gazebo>`` blocks); the MuJoCo backend
(:mod:`smores_assembly.sim.mujoco_world`) builds its MJCF from :class:`ModuleDescription`
and the Gazebo launch file spawns the same file. No ROS imports (plain ``xml.etree``).
"""
from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path

from smores_assembly.errors import InputError

#: Links and joints the description must have.
REQUIRED_LINKS = ("base_link", "left_wheel", "right_wheel", "skid_front", "skid_back",
                  "pan_link", "top_face")
REQUIRED_JOINTS = ("left_wheel_joint", "right_wheel_joint", "pan", "tilt", "skid_front_joint",
                   "skid_back_joint")


class DescriptionError(InputError):
    """The URDF is missing, malformed or lacks a required element (the message says which)."""


@dataclass(frozen=True)
class Inertial:
    """Mass [kg], centre of mass in the link frame [m], diagonal inertia [kg m^2]."""

    mass: float
    com: tuple[float, float, float]
    diag: tuple[float, float, float]


@dataclass(frozen=True)
class ModuleDescription:
    """Numbers of one module, all SI, frames as in the URDF (REP-103).

    ``body_size``: collision box (x, y, z) [m]; ``wheel_radius``, ``wheel_width`` [m];
    ``track``: distance between the wheel centres [m]; ``skid_x``: x of the two skids [m],
    ``skid_z``, ``skid_radius`` [m]; ``wheel_speed_max`` [rad/s] and ``wheel_effort_max``
    [N m] from the wheel joints' ``<limit>``; ``pan_limit``, ``tilt_limit`` [rad];
    ``tilt_x``: x of the tilt axis [m]; ``friction``: per link name, Coulomb coefficient.
    """

    body: Inertial
    wheel: Inertial
    face: Inertial
    body_size: tuple[float, float, float]
    wheel_radius: float
    wheel_width: float
    track: float
    skid_x: tuple[float, float]
    skid_z: float
    skid_radius: float
    wheel_speed_max: float
    wheel_effort_max: float
    pan_limit: float
    tilt_limit: float
    tilt_x: float
    friction: dict

    @property
    def total_mass(self) -> float:
        """Mass of the whole module [kg] (skids and the massless pan link neglected)."""
        return self.body.mass + 2 * self.wheel.mass + self.face.mass


def default_urdf_path() -> Path:
    """``description/smores_ep.urdf`` of this checkout, else of the installed package share.

    Raises:
        DescriptionError: found in neither place.
    """
    here = Path(__file__).resolve().parents[2] / "description" / "smores_ep.urdf"
    if here.is_file():
        return here
    from smores_assembly.launch.yaml_launch import LaunchError, find_pkg_share  # noqa: PLC0415
    try:
        p = find_pkg_share("smores_assembly") / "description" / "smores_ep.urdf"
    except LaunchError as exc:
        raise DescriptionError(f"description: smores_ep.urdf not found ({exc})") from None
    if not p.is_file():
        raise DescriptionError(f"description: {p} does not exist")
    return p


def _floats(text: str | None, n: int, what: str) -> tuple[float, ...]:
    try:
        vals = tuple(float(v) for v in (text or "").split())
    except ValueError:
        raise DescriptionError(f"{what}: {text!r} is not {n} numbers") from None
    if len(vals) != n:
        raise DescriptionError(f"{what}: {text!r} is not {n} numbers")
    return vals


def load_description(path: str | Path | None = None) -> ModuleDescription:
    """Parse the module URDF at ``path`` (default: :func:`default_urdf_path`).

    Raises:
        DescriptionError: unreadable XML, a missing link/joint/element, or a bad number.
    """
    path = Path(path) if path is not None else default_urdf_path()
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError) as exc:
        raise DescriptionError(f"description {path}: {exc}") from None
    links = {e.get("name"): e for e in root.findall("link")}
    joints = {e.get("name"): e for e in root.findall("joint")}
    for name in REQUIRED_LINKS:
        if name not in links:
            raise DescriptionError(f"description {path}: link {name!r} missing")
    for name in REQUIRED_JOINTS:
        if name not in joints:
            raise DescriptionError(f"description {path}: joint {name!r} missing")

    def inertial(link: str) -> Inertial:
        e = links[link].find("inertial")
        if e is None or e.find("mass") is None or e.find("inertia") is None:
            raise DescriptionError(f"description {path}: link {link!r} has no inertial")
        mass = _floats(e.find("mass").get("value"), 1, f"{link}.mass")[0]  # type: ignore[union-attr]
        o = e.find("origin")
        com = _floats(o.get("xyz"), 3, f"{link}.inertial.xyz") if o is not None else (0, 0, 0)
        i = e.find("inertia")
        diag = tuple(_floats(i.get(k), 1, f"{link}.inertia.{k}")[0]  # type: ignore[union-attr]
                     for k in ("ixx", "iyy", "izz"))
        if mass <= 0 or min(diag) <= 0:
            raise DescriptionError(f"description {path}: link {link!r}: mass and inertia "
                                   f"must be > 0 (mass {mass}, inertia {diag})")
        return Inertial(mass, tuple(com), diag)  # type: ignore[arg-type]

    def geometry(link: str, kind: str):
        g = links[link].find(f"collision/geometry/{kind}")
        if g is None:
            raise DescriptionError(f"description {path}: link {link!r} has no {kind} "
                                   f"collision geometry")
        return g

    def origin(joint: str) -> tuple[float, float, float]:
        o = joints[joint].find("origin")
        return _floats(o.get("xyz"), 3, f"{joint}.origin") if o is not None else (0, 0, 0)  # type: ignore[return-value]

    def limit(joint: str, attr: str) -> float:
        lim = joints[joint].find("limit")
        if lim is None or lim.get(attr) is None:
            raise DescriptionError(f"description {path}: joint {joint!r} has no limit {attr}")
        return _floats(lim.get(attr), 1, f"{joint}.limit.{attr}")[0]

    body_size = _floats(geometry("base_link", "box").get("size"), 3, "base_link box size")
    tyre = geometry("left_wheel", "cylinder")
    radius = _floats(tyre.get("radius"), 1, "left_wheel radius")[0]
    width = _floats(tyre.get("length"), 1, "left_wheel length")[0]
    skid = geometry("skid_front", "sphere")
    yl, yr = origin("left_wheel_joint")[1], origin("right_wheel_joint")[1]
    friction = {}
    for g in root.findall("gazebo"):
        ref = g.get("reference")
        if ref and g.find("mu1") is not None:
            friction[ref] = _floats(g.find("mu1").text, 1, f"gazebo {ref} mu1")[0]  # type: ignore[union-attr]
    for name in ("left_wheel", "right_wheel", "skid_front", "base_link"):
        if name not in friction:
            raise DescriptionError(f"description {path}: no <gazebo reference={name!r}> mu1")
    return ModuleDescription(
        body=inertial("base_link"), wheel=inertial("left_wheel"), face=inertial("top_face"),
        body_size=tuple(body_size), wheel_radius=radius, wheel_width=width, track=yl - yr,  # type: ignore[arg-type]
        skid_x=(origin("skid_front_joint")[0], origin("skid_back_joint")[0]),
        skid_z=origin("skid_front_joint")[2],
        skid_radius=_floats(skid.get("radius"), 1, "skid radius")[0],
        wheel_speed_max=limit("left_wheel_joint", "velocity"),
        wheel_effort_max=limit("left_wheel_joint", "effort"),
        pan_limit=limit("pan", "upper"), tilt_limit=limit("tilt", "upper"),
        tilt_x=origin("tilt")[0], friction=friction)
