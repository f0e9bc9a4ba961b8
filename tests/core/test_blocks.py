"""polyphys.blocks: the workers of a partition claim a stage's blocks; every item is computed once,
with the same result whoever computes it, and the counters are zero again after the stage."""

import threading

import numpy as np
import pytest
import warp as wp
from polyphys.blocks import BlockQueue
from polyphys.layout import Layout, split_envs

from .blocks_probe_kernels import probe_claimed, probe_claims

N, BLOCK, WORK = 3001, 16, 60        # the last block is short


def _layout(n_envs: int, threads: int) -> Layout:
    return Layout(n_envs=n_envs, batched=n_envs > 1, device="cpu", precision="32", dt=1e-3, substeps=1,
                  gravity=(0.0, 0.0, -9.81), partitions=split_envs(n_envs, threads))


class _Threads:
    """Solver.parallel as inside a step: every worker's stage on its own thread at once (Warp releases
    the GIL while a launch runs), then a barrier."""

    def parallel(self, part, stage, tag=None, after=None):
        ts = [threading.Thread(target=stage, args=(w,)) for w in range(part.workers)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()


class _OneAfterAnother:
    """Solver.parallel outside a step (the first step, forward(), getters): worker after worker."""

    def parallel(self, part, stage, tag=None, after=None):
        for w in range(part.workers):
            stage(w)


def _run(n_envs, threads, solver, rounds=3):
    layout = _layout(n_envs, threads)
    q = BlockQueue(layout)
    value = wp.full((n_envs, N), float("nan"), dtype=float, device="cpu")
    who = wp.full((n_envs, N), -1, dtype=wp.int32, device="cpu")
    hits = wp.zeros((n_envs, N), dtype=wp.int32, device="cpu")
    out = []
    for _ in range(rounds):            # the counters must be reset for the next stage
        hits.zero_()
        for part in layout.partitions:
            s = part.slice

            def launch(threads, claim, counters, part=part, s=s):
                wp.launch(probe_claimed, dim=(part.n_envs, threads), inputs=[N, BLOCK, 0, claim, WORK],
                          outputs=[value[s], who[s], hits[s], counters], device="cpu")

            q.stage(solver, part, -(-N // BLOCK), launch)
        assert (hits.numpy() == 1).all(), "an item computed twice or never"
        assert (q.counters.numpy() == 0).all(), "counters not reset after the stage"
        out.append(value.numpy().copy())
    return out


def _reference(n_envs):
    i = np.arange(N, dtype=np.float64)
    k = np.arange(WORK, dtype=np.float64)
    one = (np.sin((i[:, None] + 1) * 0.001 + k[None, :] * 0.1) / (k[None, :] + 1)).sum(1)
    return np.tile(one, (n_envs, 1))


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_claimed_stage_on_concurrent_workers_computes_every_item_once(threads):
    one = _run(1, 1, _Threads())
    many = _run(1, threads, _Threads())
    for a, b in zip(one, many):
        np.testing.assert_array_equal(a, b)          # the same bits whoever computed an item
    # float32 sums of WORK terms of magnitude <= 1: rounding ~ WORK * 6e-8 relative to the largest term
    np.testing.assert_allclose(one[0], _reference(1), rtol=0, atol=WORK * 1e-6)


def test_claimed_stage_one_after_another_and_several_envs():
    # 3 envs on 2 threads: partitions of one env with one worker each would not claim; 1 env on 3
    # threads one worker after another (outside a step): the first worker takes every block
    a = _run(3, 2, _OneAfterAnother())
    b = _run(1, 3, _OneAfterAnother())
    np.testing.assert_array_equal(a[0][:1], b[0])
    np.testing.assert_allclose(a[0], _reference(3), rtol=0, atol=WORK * 1e-6)


def test_workers_take_blocks_from_each_other():
    """With one worker held back, the other takes every block (what a fixed share cannot do)."""
    layout = _layout(1, 2)
    q = BlockQueue(layout)
    part = layout.partitions[0]
    value = wp.zeros((1, N), dtype=float, device="cpu")
    who = wp.full((1, N), -1, dtype=wp.int32, device="cpu")
    hits = wp.zeros((1, N), dtype=wp.int32, device="cpu")
    first_done = threading.Event()

    def launch(threads, claim, counters):
        w = int(threading.current_thread().name == "late")
        if w:
            first_done.wait(timeout=60)
        wp.launch(probe_claimed, dim=(1, threads), inputs=[N, BLOCK, w, claim, WORK],
                  outputs=[value, who, hits, counters], device="cpu")
        if not w:
            first_done.set()

    class Late:
        def parallel(self, part, stage, tag=None, after=None):
            ts = [threading.Thread(target=stage, args=(w,), name="late" if w else "early") for w in range(2)]
            for t in ts:
                t.start()
            for t in ts:
                t.join()

    q.stage(Late(), part, -(-N // BLOCK), launch)
    assert (hits.numpy() == 1).all()
    assert (who.numpy() == 0).all()                 # the early worker took every block
    assert (q.counters.numpy() == 0).all()


def test_workers_claim_their_home_range_first_then_the_others():
    """10 blocks on 2 workers: worker w's home range is blocks [5w, 5w + 5); each claims its own in
    order, then what is left of the other's, from its front; the block count once none is left."""
    from polyphys.kernels.blocks import claim_code

    q = BlockQueue(_layout(1, 2))
    counters = q.counters

    def claims(w, count):
        out = wp.full(count, -1, dtype=wp.int32, device="cpu")
        wp.launch(probe_claims, dim=1, inputs=[claim_code(w, 2), 10, count], outputs=[out, counters], device="cpu")
        return out.numpy().tolist()

    assert claims(1, 3) == [5, 6, 7]
    assert claims(0, 8) == [0, 1, 2, 3, 4, 8, 9, 10]
    assert claims(1, 1) == [10]
    # 3 workers, 10 blocks: home ranges [0, 3), [3, 6), [6, 10); worker 2 takes its own, then 0's, then 1's
    q3 = BlockQueue(_layout(1, 3))
    out = wp.full(11, -1, dtype=wp.int32, device="cpu")
    wp.launch(probe_claims, dim=1, inputs=[claim_code(2, 3), 10, 11], outputs=[out, q3.counters], device="cpu")
    assert out.numpy().tolist() == [6, 7, 8, 9, 0, 1, 2, 3, 4, 5, 10]
