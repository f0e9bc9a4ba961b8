"""What a solver is built for: env count, device, precision, time step, env partitions."""

from __future__ import annotations

import attrs


@attrs.frozen
class Partition:
    """A contiguous range of envs [start, stop) stepped by one worker (thread) with its own graph.

    Solvers launch their kernels on per-partition views of their batch-first arrays
    (``array[part.start:part.stop]``) so that partitions never touch each other's memory.
    """

    index: int
    start: int
    stop: int

    @property
    def n_envs(self) -> int:
        return self.stop - self.start

    @property
    def slice(self) -> slice:
        return slice(self.start, self.stop)


def split_envs(n_envs: int, n_parts: int) -> tuple[Partition, ...]:
    """Split n_envs into n_parts contiguous, near-equal partitions (the first ones one larger)."""
    n_parts = max(1, min(n_parts, n_envs))
    base, extra = divmod(n_envs, n_parts)
    parts, start = [], 0
    for i in range(n_parts):
        stop = start + base + (1 if i < extra else 0)
        parts.append(Partition(i, start, stop))
        start = stop
    return tuple(parts)


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
