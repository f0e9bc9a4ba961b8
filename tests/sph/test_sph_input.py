"""Bad input: clear errors naming the field, the value and what is allowed."""

import warnings

import polyphys
import pytest
from polyphys import morphs
from polyphys.errors import OptionError, PolyphysWarning


def test_kernel_radius_too_small():
    from polyphys.plugins.sph import SPHOptions

    with pytest.raises(OptionError, match=r"support_radius = 0.02 is too small .* at least .*= 0.03 m"):
        SPHOptions(particle_size=0.02, support_radius=0.02)


def test_bounds_and_enums():
    from polyphys.plugins.sph import SPHOptions

    with pytest.raises(OptionError, match="upper_bound"):
        SPHOptions(lower_bound=(0, 0, 0), upper_bound=(1, 0, 1))
    with pytest.raises(OptionError, match="pressure_solver.*allowed"):
        SPHOptions(pressure_solver="pcisph")
    with pytest.raises(OptionError, match="boundary_pressure.*allowed"):
        SPHOptions(boundary_pressure="mls")
    with pytest.raises(OptionError, match="rho"):
        polyphys.materials.SPH.Liquid(rho=-1.0)


def test_particles_outside_domain():
    from polyphys.plugins.sph import Liquid, SPHOptions

    scene = polyphys.Scene(sph=SPHOptions(particle_size=0.05, lower_bound=(0, 0, 0), upper_bound=(1, 1, 1)))
    with pytest.raises(OptionError, match=r"particles lie outside the SPH domain"):
        scene.add_entity(morphs.Box(size=(0.3, 0.3, 0.3), pos=(0.9, 0.5, 0.5)), material=Liquid())


def test_wcsph_time_step_above_cfl_names_the_largest_stable_substep():
    from polyphys.plugins.sph import Liquid, SPHOptions

    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.01, substeps=1),
                           sph=SPHOptions(pressure_solver="wcsph", particle_size=0.05,
                                          lower_bound=(0, 0, 0), upper_bound=(0.5, 0.5, 0.5)))
    scene.add_entity(morphs.Box(size=(0.2, 0.2, 0.2), pos=(0.25, 0.25, 0.1)), material=Liquid())
    # c0 = sqrt(50000 * 7 / 1000) = 18.7 m/s; v = sqrt(2 g 0.175) = 1.85 m/s;
    # h_max = 0.4 * 0.05 / (18.7 + 1.85) = 9.73e-4 s -> substeps >= 11
    with pytest.raises(OptionError, match=r"largest stable substep is 0.000973 s.*substeps >= 11"):
        scene.build()


def test_dfsph_time_step_above_cfl_warns():
    from polyphys.plugins.sph import Liquid, SPHOptions

    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.05, substeps=1),
                           sph=SPHOptions(particle_size=0.05, lower_bound=(0, 0, 0), upper_bound=(0.5, 0.5, 0.5)))
    scene.add_entity(morphs.Box(size=(0.2, 0.2, 0.2), pos=(0.25, 0.25, 0.1)), material=Liquid())
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        scene.build()
    assert any(issubclass(r.category, PolyphysWarning) and "largest stable substep" in str(r.message)
               for r in rec)


def test_wrong_morph_for_liquid_and_no_liquid():
    from polyphys.errors import BuildError
    from polyphys.plugins.sph import Boundary, Liquid, SPHOptions

    scene = polyphys.Scene(sph=SPHOptions(lower_bound=(-1, -1, 0), upper_bound=(1, 1, 1)))
    with pytest.raises(OptionError, match="cannot be sampled from a Plane"):
        scene.add_entity(morphs.Plane(), material=Liquid())
    scene.add_entity(morphs.Plane(), material=Boundary())
    with pytest.raises(BuildError, match="no liquid particle"):
        scene.build()


def _build_warnings(mu, xsph=0.0, dt=0.004, substeps=2):
    from polyphys.plugins.sph import Liquid, SPHOptions

    scene = polyphys.Scene(sim=polyphys.SimOptions(dt=dt, substeps=substeps),
                           sph=SPHOptions(particle_size=0.02, xsph=xsph, lower_bound=(0, 0, 0),
                                          upper_bound=(0.2, 0.2, 0.3)))
    scene.add_entity(morphs.Box(size=(0.1, 0.1, 0.2), pos=(0.05, 0.05, 0.1)), material=Liquid(mu=mu))
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        scene.build()
    return [str(r.message) for r in rec if issubclass(r.category, PolyphysWarning)]


def test_viscous_time_step_above_the_explicit_limit_warns():
    """ν = 0.05 m²/s at dx = 2 cm: the fastest lattice mode of the Laplacian viscosity decays at
    λ = 24258·ν (sampling.viscous_rate, cubic spline at 2dx), explicit Euler is stable for h·λ ≤ 2;
    the warning fires beyond half: h_max = 1/λ = 8.24e-4 s -> substeps >= 5 for dt = 4 ms."""
    msgs = _build_warnings(mu=50.0)
    assert any("explicit stability limit of the viscosity" in m and "largest stable substep is 0.000824 s" in m
               and "substeps >= 5" in m for m in msgs), msgs
    assert not any("viscosity" in m for m in _build_warnings(mu=50.0, substeps=5))


def test_too_little_viscosity_warns_unless_xsph():
    """Water's 1e-3 Pa·s at dx = 2 cm: below 0.01·dx·√(2|g|Δ) (3.86e-4 m²/s) a resting
    liquid was measured to blow up (ν = 1e-6 m²/s is reported; the lattice top is at 0.19 m: v = 1.93 m/s);
    XSPH (ε = 0.5) or the default viscosity (5 Pa·s) silence it."""
    msgs = _build_warnings(mu=0.001)
    assert any("too little dissipation" in m and "1e-06" in m and "0.000386" in m for m in msgs), msgs
    assert not any("too little dissipation" in m for m in _build_warnings(mu=0.001, xsph=0.5))
    assert not any("too little dissipation" in m for m in _build_warnings(mu=5.0))


def test_support_above_two_spacings_with_walls_is_an_error():
    """One layer of boundary particles stands for the missing liquid only within 2·dx: with a larger
    support a resting column sank into the floor (3 cm at 3·dx, docs/sph.md). Without walls the
    support is free (≥ 1.5·dx)."""
    from polyphys.plugins.sph import Liquid, SPHOptions

    def build(**kw):
        scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.002, substeps=2),
                               sph=SPHOptions(particle_size=0.02, support_radius=0.06, lower_bound=(0, 0, 0),
                                              upper_bound=(0.2, 0.2, 0.3), **kw))
        scene.add_entity(morphs.Box(size=(0.1, 0.1, 0.1), pos=(0.1, 0.1, 0.1)), material=Liquid())
        scene.build()

    with pytest.raises(OptionError, match=r"support_radius = 0.06 m exceeds 2·particle_size = 0.04 m.*"
                                          r"allowed: support_radius <= 0.04 m, or no walls"):
        build()
    build(box_walls=False)
