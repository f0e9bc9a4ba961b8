"""Blocks of a stage's items claimed by a partition's workers one at a time (dynamic load balance).

A gather stage (each item's result read from other items, written to the item alone) gives every
worker a fixed share in ``Solver.parallel``: when the items cost unequal work (SPH particles at a
free surface or a wall have fewer neighbours than those inside; a wetted wall's boundary particles
more than a dry one's) or a worker's thread is descheduled by another process, the stage waits for
the slowest share. ``BlockQueue.stage`` runs such a stage so that the workers take blocks of items
until none is left: every worker launches the stage's claiming kernel with one thread per env, which
computes unclaimed blocks (``polyphys.kernels.blocks.next_block``, ``block_after``) until all are
taken — first the blocks of the worker's own contiguous home range, in order, then what is left of
the others' (so equally fast workers each compute one contiguous run and keep its neighbour data in
their own caches, instead of alternating blocks). A block is computed by one worker with the same operations whichever
worker takes it, so the results are bit-identical for any number of workers (docs/architecture.md,
"Threads within a partition"); only which worker computed what changes from run to run.

Rules for a claimed stage: the items' results must not depend on the order in which the blocks
are computed (no sum across blocks, no write another block reads in the same stage), and it
cannot follow another stage worker by worker (``parallel(..., after=tag)``): its shares are not
fixed. A stage that depends on the order of its items within a worker claims two-ended instead
(``polyphys.kernels.blocks.claim_two_ended``, issued by its owner: ``BinSort.sort``'s claimed count).
With one worker the kernel computes block c in thread c (no claiming, no extra launch; on CUDA a thread
per block is what the device needs).
"""

from __future__ import annotations


class BlockQueue:
    """The claim counters of a solver's claimed stages: per env one 64-byte row per worker of its
    partition (the blocks claimed from that worker's home range; the workers through the stage), zero
    between stages."""

    def __init__(self, layout):
        import warp as wp

        from .kernels import blocks as K

        self.device = layout.device
        workers = max([part.workers for part in layout.partitions] + [1])
        self.counters = wp.zeros((layout.n_envs, K.ROW * workers), dtype=wp.int32, device=layout.device)
        self._views = {part.index: self.counters[part.slice] for part in layout.partitions}

    def clear(self) -> None:
        """Zero the counters (outside a step; after a step that failed midway: ``Solver.on_reset``)."""
        self.counters.zero_()

    def views(self, part):
        """The partition's rows of counters (for a claiming stage a caller issues itself:
        ``BinSort.sort``'s claimed count)."""
        return self._views[part.index]

    def stage(self, solver, part, n_blocks: int, launch, then=None) -> None:
        """One parallel stage of ``solver`` over ``part`` whose ``n_blocks`` blocks the workers claim:
        ``launch(threads, claim, counters)`` issues the stage's kernel over (part.n_envs, threads) with
        ``counters`` the partition's rows. One worker: a single launch with a thread per block and
        ``claim`` 0. Several: worker w launches one thread per env with ``claim``
        ``claim_code(w, workers)``, then ``release``
        (the last worker through resets the counters for the next claimed stage).
        ``then(w)``, when given, issues worker w's launches after its claimed one in the same stage (a
        fixed share of other work that needs nothing the claimed launch writes)."""
        import warp as wp

        from .kernels import blocks as K

        counters = self._views[part.index]
        if part.workers == 1:
            launch(max(int(n_blocks), 1), 0, counters)
            if then is not None:
                then(0)
            return

        def stage(w):
            launch(1, K.claim_code(w, part.workers), counters)
            wp.launch(K.release, dim=part.n_envs, inputs=[part.workers], outputs=[counters], device=self.device)
            if then is not None:
                then(w)

        solver.parallel(part, stage)
