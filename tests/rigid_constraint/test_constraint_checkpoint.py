"""Checkpoints with active contacts (issue 6): a checkpoint taken mid-contact continues bit-exactly
— the constraint solve's warm start (the last qacc) is part of the state — in the same process and
in a new Python process; reset clears the warm start. Bit-exact because the CPU kernels are
deterministic (one thread per env, fixed reduction order) and every input of the step is restored."""

import subprocess
import sys
import textwrap

import numpy as np
import pytest

# the scene, shared verbatim by this process and the child process (run as a script)
SCRIPT = textwrap.dedent('''
    import sys
    import warnings

    import numpy as np
    import polyphys
    from polyphys import morphs
    from polyphys.errors import PolyphysWarning
    from polyphys.plugins.rigid import RigidOptions
    from polyphys.plugins.rigid.materials import Rigid


    def build(cone):
        """Two envs of a tilted box dropped on a plane, with a sphere resting on it (box-plane,
        sphere-box contacts), dt 0.01, 2 substeps, float64, graph capture on."""
        kw = dict(friction_cone=cone)
        if cone == "elliptic":
            kw["contact_resolution"] = "convex"
        scene = polyphys.Scene(sim=polyphys.SimOptions(dt=0.01, substeps=2, gravity=(0, 0, -9.81), precision="64"),
                               rigid=RigidOptions(**kw))
        scene.add_entity(morphs.Box(size=(0.3, 0.2, 0.1), pos=(0, 0, 0.2), euler=(8, 12, 20)), Rigid(), name="box")
        scene.add_entity(morphs.Sphere(radius=0.04, pos=(0.02, 0.01, 0.32)), Rigid(rho=500.0), name="ball")
        scene.add_entity(morphs.Plane(), Rigid(), name="ground")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", PolyphysWarning)
            scene.build(n_envs=2)
        return scene


    def run(scene, k):
        for _ in range(k):
            scene.step()
        return {n: a.numpy().copy() for n, a in scene.solver("rigid").state_arrays().items()}


    if __name__ == "__main__":
        cone, ckpt, out, k = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
        scene = build(cone)
        scene.load_checkpoint(ckpt)
        np.savez(out, **run(scene, k))
''')


@pytest.fixture(scope="module")
def lib(tmp_path_factory):
    path = tmp_path_factory.mktemp("ckpt") / "contact_scene.py"
    path.write_text(SCRIPT)
    ns = {"__name__": "contact_scene"}
    exec(compile(SCRIPT, str(path), "exec"), ns)
    ns["path"] = str(path)
    return ns


def _assert_same(a, b):
    assert sorted(a) == sorted(b)
    for n in a:
        np.testing.assert_array_equal(a[n], b[n], err_msg=n)


@pytest.mark.parametrize("cone", ["pyramidal", "elliptic"])
def test_checkpoint_mid_contact_bit_exact_in_a_new_process(cone, lib, tmp_path):
    """Checkpoint after 25 steps (the box has landed and the ball sits on it: contacts active,
    warm start non-zero), 20 more steps; the same 20 steps after load_checkpoint in this process
    and in a fresh `python` process give every state array bit for bit (pyramidal; elliptic with
    convex resolution). Restoring everything but the warm start does not: the warm start is
    state."""
    scene = lib["build"](cone)
    st = scene.solver("rigid").data
    lib["run"](scene, 25)
    assert (st.ncon.numpy() >= 2).all()
    assert np.abs(st.qacc_warmstart.numpy()).max() > 0
    ckpt = scene.save_checkpoint(tmp_path / "mid")
    ref = lib["run"](scene, 20)
    assert "constraint_qacc" in ref
    scene.load_checkpoint(ckpt)
    _assert_same(ref, lib["run"](scene, 20))
    out = tmp_path / "child.npz"
    proc = subprocess.run([sys.executable, lib["path"], cone, str(ckpt), str(out), "20"], capture_output=True,
                          text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with np.load(out) as z:
        _assert_same(ref, {n: z[n] for n in z.files})
    # without the warm start (zeroed after loading), the continuation is not the same bits
    scene.load_checkpoint(ckpt)
    st.qacc_warmstart.zero_()
    other = lib["run"](scene, 20)
    assert any(not np.array_equal(ref[n], other[n]) for n in ref)


def test_reset_clears_the_warm_start(lib):
    """reset() after contact: the warm start returns to its value right after build (a fresh scene's,
    bit for bit) — all envs, or only the reset env (env 1's warm start and state untouched) — and
    the next steps of a reset env equal a fresh scene's bit for bit."""
    fresh = lib["build"]("pyramidal")
    q_fresh = fresh.solver("rigid").data.qacc_warmstart.numpy().copy()
    scene = lib["build"]("pyramidal")
    st = scene.solver("rigid").data
    lib["run"](scene, 25)
    before = st.qacc_warmstart.numpy().copy()
    assert not np.array_equal(before, q_fresh)
    scene.reset(envs_idx=[0])
    after = st.qacc_warmstart.numpy()
    np.testing.assert_array_equal(after[0], q_fresh[0])
    np.testing.assert_array_equal(after[1], before[1])
    a, b = lib["run"](scene, 15), lib["run"](fresh, 15)
    for n in a:
        np.testing.assert_array_equal(a[n][0], b[n][0], err_msg=n)
    scene.reset()
    np.testing.assert_array_equal(st.qacc_warmstart.numpy(), q_fresh)
