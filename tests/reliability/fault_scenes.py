"""Scenes the reliability tests inject faults into: every registered solver's contract scene, a
rigid scene with collisions (plane, box, sphere, capsule, cylinder: the broadphase and narrowphase
run), a rigid MJCF scene on a heightfield with a convex mesh (GJK/EPA, the heightfield's cell
lookup), and Legacy-coupled rigid + MPM / SPH / PBD scenes (the coupler's SDF queries run).

``build(name, n_envs, substeps)`` returns a built scene whose envs already differ (each scene's
drive gives every env its own velocities), so that a leak from one env into another shows up.
"""

from __future__ import annotations

import warnings

import numpy as np


def _sim(substeps: int, **kw):
    from polyphys import SimOptions

    return SimOptions(dt=kw.pop("dt", 0.01), substeps=substeps, **kw)


def _rigid_collide(n_envs: int, substeps: int, **sim):
    import polyphys
    from polyphys import morphs
    from polyphys.plugins.rigid.materials import Rigid

    sc = polyphys.Scene(sim=_sim(substeps, **sim))
    sc.add_entity(morphs.Plane(), Rigid(), name="ground")
    sc.add_entity(morphs.Box(size=(0.2, 0.3, 0.1), pos=(0.0, 0.0, 0.06), euler=(5, 10, 30)), Rigid(rho=500.0),
                  name="box")
    sc.add_entity(morphs.Sphere(radius=0.07, pos=(0.05, 0.1, 0.2)), Rigid(), name="ball")
    sc.add_entity(morphs.Capsule(radius=0.04, height=0.2, pos=(-0.3, 0.0, 0.05), euler=(90, 0, 20)), Rigid(),
                  name="capsule")
    sc.add_entity(morphs.Cylinder(radius=0.05, height=0.1, pos=(0.3, -0.2, 0.06), euler=(0, 15, 0)), Rigid(),
                  name="cylinder")
    sc.build(n_envs=n_envs)
    rng = np.random.default_rng(1)
    for e in sc.entities[1:]:
        e.set_dofs_velocity(rng.normal(scale=0.3, size=(max(1, n_envs), 6)) if n_envs else rng.normal(size=6))
    return sc


_TERRAIN = """<mujoco><asset>
<hfield name="h" nrow="5" ncol="6" size="0.6 0.5 0.1 0.2"
 elevation="0 .1 .2 .1 0 .1  .1 .2 .3 .2 .1 0  0 .1 .2 .3 .2 .1  .1 0 .1 .2 .1 0  0 .1 0 .1 0 .1"/>
<mesh name="wedge" vertex="0 0 0  .12 0 0  0 .1 0  0 0 .08  .12 0 .08  0 .1 .08"/>
</asset><worldbody>
<geom type="hfield" hfield="h"/>
<body pos="0.05 -0.1 0.15" euler="10 20 30"><freejoint/><geom type="box" size=".05 .04 .03"/></body>
<body pos="-0.2 0.1 0.2" euler="0 30 0"><freejoint/><geom type="mesh" mesh="wedge"/></body>
<body pos="0.25 0.2 0.2"><freejoint/><geom type="sphere" size=".05"/></body>
<body pos="-0.1 -0.25 0.2" euler="80 0 10"><freejoint/><geom type="capsule" size=".03 .06"/></body>
</worldbody></mujoco>"""


def _rigid_terrain(n_envs: int, substeps: int, **sim):
    """A heightfield, a convex mesh (GJK/EPA), a box, a sphere and a capsule (MJCF, written to a
    temporary file)."""
    import os
    import tempfile

    import polyphys
    from polyphys import morphs
    from polyphys.plugins.rigid.materials import Rigid

    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "terrain.xml")
        with open(path, "w") as fh:
            fh.write(_TERRAIN)
        sc = polyphys.Scene(sim=_sim(substeps, **sim))
        body = sc.add_entity(morphs.MJCF(file=path), Rigid(), name="terrain")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            sc.build(n_envs=n_envs)
    rng = np.random.default_rng(3)
    n_dofs = body.get_dofs_velocity().shape[-1]
    body.set_dofs_velocity(rng.normal(scale=0.3, size=(max(1, n_envs), n_dofs)) if n_envs else rng.normal(size=n_dofs))
    return sc


def _legacy(kind: str, n_envs: int, substeps: int, **sim):
    import polyphys
    from polyphys import morphs
    from polyphys.plugins.rigid.materials import Rigid

    opts = {}
    if kind == "mpm":
        from polyphys.plugins.mpm.materials import Elastic
        from polyphys.plugins.mpm.options import MPMOptions

        opts["mpm"] = MPMOptions(lower_bound=(0.0, 0.0, 0.0), upper_bound=(0.5, 0.5, 0.5), grid_density=32.0,
                                 cfl_check="off")
        particles = (morphs.Box(size=(0.1, 0.1, 0.1), pos=(0.25, 0.25, 0.3)), Elastic(E=2e3, rho=500.0))
        rigid_pos = (0.25, 0.25, 0.15)
    elif kind == "sph":
        from polyphys.plugins.sph.materials import Liquid
        from polyphys.plugins.sph.options import SPHOptions

        opts["sph"] = SPHOptions(particle_size=0.05, lower_bound=(0, 0, 0), upper_bound=(0.4, 0.3, 0.4),
                                 max_density_iters=8, max_divergence_iters=4)
        particles = (morphs.Box(size=(0.2, 0.2, 0.1), pos=(0.12, 0.15, 0.06)), Liquid(gamma=0.01))
        rigid_pos = (0.3, 0.15, 0.2)
    else:
        from polyphys.plugins.pbd.materials import Particle
        from polyphys.plugins.pbd.options import PBDOptions

        opts["pbd"] = PBDOptions(iterations=2, lower_bound=(-0.25, -0.25, 0.0), upper_bound=(0.25, 0.25, 0.5))
        particles = (morphs.Box(size=(0.06, 0.06, 0.06), pos=(0.0, 0.0, 0.2)), Particle())
        rigid_pos = (0.0, 0.0, 0.1)
    from polyphys.plugins.rigid import RigidOptions

    sc = polyphys.Scene(sim=_sim(substeps, **sim), rigid=RigidOptions(enable_collision=False), **opts)
    sc.add_entity(morphs.Box(size=(0.12, 0.1, 0.05), pos=rigid_pos, euler=(0, 0, 20)),
                  Rigid(rho=300.0, coup_friction=0.3, coup_restitution=0.2), name="rigid")
    blob = sc.add_entity(particles[0], particles[1], name="particles")
    sc.build(n_envs=n_envs)
    if sc.couplers == []:
        raise AssertionError(f"legacy_{kind}: no coupler attached")
    rng = np.random.default_rng(2)
    n = max(1, n_envs)
    v = rng.normal(scale=0.3, size=(n, blob.n_particles, 3))
    blob.set_particles_vel(v if n_envs else v[0])
    return sc


def scene_names() -> list[str]:
    from polyphys.registry import registry

    names = [f"contract:{r.name}" for r in registry().all("solver")]
    have = {r.name for r in registry().all("solver")}
    if "rigid" in have:
        names += ["rigid_collide", "rigid_terrain"]
        names += [f"legacy_{k}" for k in ("mpm", "sph", "pbd") if k in have]
    return names


def build(name: str, n_envs: int, substeps: int, **sim):
    if name.startswith("contract:"):
        from polyphys.contract import build_scene
        from polyphys.registry import registry

        rec = registry().get("solver", name.split(":", 1)[1])
        return build_scene(rec, n_envs, substeps=substeps, **sim)
    if name == "rigid_collide":
        return _rigid_collide(n_envs, substeps, **sim)
    if name == "rigid_terrain":
        return _rigid_terrain(n_envs, substeps, **sim)
    if name.startswith("legacy_"):
        return _legacy(name[len("legacy_"):], n_envs, substeps, **sim)
    raise KeyError(name)


def state_owners(scene) -> list:
    """Every solver and coupler with state arrays, in a fixed order."""
    return [*scene.solvers, *scene.couplers]
