"""What a solver is built for: env count, device, precision, time step, env partitions."""

from __future__ import annotations

import attrs


@attrs.frozen
class Partition:
    """A contiguous range of envs [start, stop) stepped by ``workers`` threads with its own graph(s).

    Solvers launch their kernels on per-partition views of their batch-first arrays
    (``array[part.start:part.stop]``) so that partitions never touch each other's memory. When a
    partition has more than one worker (fewer envs than ``SimOptions.cpu_threads``), a solver may
    split a stage's element range across them: ``Solver.parallel(part, stage)`` runs ``stage(w)``
    for every worker ``w`` with a barrier after it, and ``chunk(w, n)`` is worker ``w``'s share of
    ``n`` elements (docs/architecture.md, "Threads within a partition").
    """

    index: int
    start: int
    stop: int
    workers: int = 1

    @property
    def n_envs(self) -> int:
        return self.stop - self.start

    @property
    def slice(self) -> slice:
        return slice(self.start, self.stop)

    def chunk(self, w: int, n: int, grain: int = 1) -> tuple[int, int]:
        """Worker ``w``'s contiguous share [start, stop) of ``n`` elements: near-equal shares (the
        first ones one larger) of at least ``grain`` elements each, so a small stage runs on fewer
        workers (the others get an empty share at n, and their part of the stage costs nothing)."""
        k = max(1, min(self.workers, int(n) // max(1, int(grain))))
        if w >= k:
            return int(n), int(n)
        return chunk_range(w, k, n)

    def chunks(self, n: int, grain: int = 1) -> tuple[tuple[int, int], ...]:
        """Every worker's share of ``n`` elements, in worker order (they tile [0, n))."""
        return tuple(self.chunk(w, n, grain) for w in range(self.workers))


def chunk_range(w: int, parts: int, n: int) -> tuple[int, int]:
    """Share ``w`` of ``parts`` near-equal contiguous shares of ``range(n)``."""
    base, extra = divmod(int(n), int(parts))
    start = w * base + min(w, extra)
    return start, start + base + (1 if w < extra else 0)


def split_envs(n_envs: int, n_threads: int, per_thread: int = 1) -> tuple[Partition, ...]:
    """Split n_envs over n_threads threads: min(n_threads, n_envs) contiguous, near-equal env
    partitions (the first ones one larger), and the threads spread over them as workers (the first
    partitions get one more when they do not divide evenly). ``per_thread`` > 1 with at least as many
    envs as threads: min(n_envs, n_threads · per_thread) partitions of one worker each, which the
    threads take in turn during a step (a thread that runs faster takes more of them)."""
    n_threads = max(1, int(n_threads))
    if int(per_thread) > 1 and n_envs >= n_threads > 1:
        n_parts = min(n_envs, n_threads * int(per_thread))
        return tuple(Partition(i, *chunk_range(i, n_parts, n_envs)) for i in range(n_parts))
    n_parts = max(1, min(n_threads, n_envs))
    parts = []
    for i in range(n_parts):
        start, stop = chunk_range(i, n_parts, n_envs)
        lo, hi = chunk_range(i, n_parts, n_threads)
        parts.append(Partition(i, start, stop, max(1, hi - lo)))
    return tuple(parts)


# the automatic split (benchmarks/results/constraint.md, round 15): a thread slowed by another process
# takes fewer partitions, instead of holding up the step with half the envs
AUTO_MAX = 8
AUTO_MIN_ENVS = 64


def partitions_per_thread(n_envs: int, n_threads: int, wanted: int | None) -> int:
    """Env partitions per thread (``SimOptions.cpu_partitions_per_thread``; None: ``AUTO_MAX`` while each
    partition keeps at least ``AUTO_MIN_ENVS`` envs, else 1)."""
    if wanted is not None:
        return int(wanted)
    if n_threads < 2:
        return 1
    return max(1, min(AUTO_MAX, int(n_envs) // (int(n_threads) * AUTO_MIN_ENVS)))


@attrs.frozen(kw_only=True)
class Layout:
    """Handed to ``Solver.build``. ``n_envs`` >= 1 always (an unbatched scene has one env and
    ``batched=False``, which only changes the shapes getters return)."""

    n_envs: int
    batched: bool
    device: str
    precision: str
    dt: float
    substeps: int
    gravity: tuple
    partitions: tuple
    thread_count: int = 0      # threads stepping the partitions (0: one per partition's worker)

    @property
    def threads(self) -> int:
        """Worker threads of the whole scene: ``thread_count`` when set (partitions taken in turn by that
        many threads), else every partition's workers."""
        return self.thread_count or sum(p.workers for p in self.partitions)

    @property
    def max_workers(self) -> int:
        """The most workers of any partition (per-worker scratch arrays are sized by it)."""
        return max(p.workers for p in self.partitions)

    @property
    def h(self) -> float:
        return self.dt / self.substeps

    @property
    def float_type(self):
        import warp as wp

        return wp.float64 if self.precision == "64" else wp.float32

    @property
    def np_float(self):
        import numpy as np

        return np.float64 if self.precision == "64" else np.float32
