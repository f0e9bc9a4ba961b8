"""A per-env stable counting sort of items by integer key, split over a partition's workers.

What neighbour grids are built from: a solver writes each item's key (its cell, or a hash of it) in
``key[env, i]`` (0 <= key < n_keys), and ``BinSort.sort`` leaves in ``order[env, start[env, k] :
start[env, k + 1]]`` the items of key k in ascending index — the same order for any number of
workers and on every device, so sums over a cell's items have one fixed order (bit-exact
checkpoints, n_envs = N equal to N single runs, any ``cpu_threads``). Nothing is allocated after
construction and nothing synchronises with the host: the stages are captured with the step.

Stages (``Solver.parallel``; kernels in ``polyphys.kernels.binsort``): every worker clears its row
of counts and counts its share of the items in it (the rank of an item among its share's items of that
key) and in its row of block counts (blocks of ``BLOCK`` keys); each worker then scans the block counts
of its share of the blocks (summing those before its share again: O(n_blocks) per worker instead of a
serial launch and its barrier) and those blocks' keys — turning each worker's counts into its write
offsets — and each worker scatters its items. Two barriers. Cost O(n_items + n_keys
+ workers · keys of the blocks they have items in) per env: the local scan reads a worker's row only in the
blocks its block count says it has items in. Clearing a row costs O(n_keys) per worker unless the keys
come from ``sort``'s ``keys`` launch: then the row is non-zero only at the keys its items had in the last sort (offsets are
written only where a worker has items), and the worker zeroes just those before writing the new
keys — O(items) per worker, the keys of the last sort kept in ``key`` (``clear()`` after anything
that may have left a sort half done: ``Solver.on_reset``).

Claimed (CPU, ``blocks``): the scatter is a stage of blocks the workers claim, and with ``count`` the
keys and counts too. A count's ranks depend on the order its row counts the items in, so a claimed
count takes its blocks two-ended (``polyphys.kernels.blocks.claim_two_ended``): each worker's home range
has a front row, which its worker counts in ascending index, and a back row, which the worker before
it (w − 1 mod workers for range w) counts from the range's end down once its own range is done; the
rows are scanned in index order (range 0 front, range 0 back, range 1 front, ...), a back row's offset
being its run's end. Every key's items so land in ascending index whoever counted which block, and a
worker on a slower or busier core leaves the end of its range to the worker before it. Each worker
clears its two rows itself, where its last sort's block counts say it had items.
"""

from __future__ import annotations


class BinSort:
    """Arrays and stages of the sort, for ``n_items`` items and keys in [0, n_keys) per env.

    ``key`` (n_envs, n_items) is written by the solver before ``sort``; ``start`` (n_envs,
    n_keys + 1) and ``order`` (n_envs, n_items) are the result. Use ``views(part)`` for a
    partition's rows."""

    def __init__(self, layout, n_items: int, n_keys: int):
        import warp as wp

        from .kernels import binsort as K

        self.n_items, self.n_keys = int(n_items), int(n_keys)
        self.n_blocks = -(-self.n_keys // K.BLOCK)
        n, dev, w = layout.n_envs, layout.device, layout.max_workers
        self.cuda = not wp.get_device(dev).is_cpu
        z = lambda shape: wp.zeros(shape, dtype=wp.int32, device=dev)  # noqa: E731
        self.key = z((n, max(self.n_items, 1)))
        self.rank = z((n, max(self.n_items, 1)))
        self.order = z((n, max(self.n_items, 1)))
        self.start = z((n, self.n_keys + 1))
        # a row of counts per worker (a count in fixed shares), or two (a claimed count: ``count_block``)
        rows = 2 * w if w > 1 else 1
        self.counts = wp.zeros((n, rows, self.n_keys), dtype=wp.int32, device=dev)
        self.blocks = z((n, self.n_blocks))
        self.block_counts = wp.zeros((n, rows, self.n_blocks), dtype=wp.int32, device=dev)
        # a claimed count takes at most ENDS / 2 - 1 blocks per home range (kernels/blocks.py)
        self._count_blocks = -(-self.n_items // K.SCATTER_BLOCK)
        # the payload arguments of a claimed scatter without payload (not read)
        self._no_payload = wp.zeros((1, 1), dtype=wp.vec3, device=dev)
        self._views = {}
        for part in layout.partitions:
            s = part.slice
            self._views[part.index] = (self.key[s], self.rank[s], self.order[s], self.start[s], self.counts[s],
                                       self.blocks[s], self.block_counts[s])

    def clear(self) -> None:
        """Zero every worker's counts (outside a step): the state the first sort starts from."""
        self.counts.zero_()

    def views(self, part):
        """(key, order, start) rows of the partition's envs."""
        key, _, order, start, _, _, _ = self._views[part.index]
        return key, order, start

    def claims_count(self, part, blocks, count) -> bool:
        """Whether ``sort(part, ..., blocks=blocks, count=count)`` counts in claimed blocks."""
        from .kernels import blocks as B

        return (count is not None and blocks is not None and not self.cuda and part.workers > 1
                and self._count_blocks // part.workers < B.ENDS // 2 - 1)

    def sort(self, solver, part, keys=None, payload=None, after=None, blocks=None, count=None) -> None:
        """Sort the partition's items by key. ``keys(w, a, b)``, when given, launches worker w's
        key computation for items [a, b) first (in the same stage as its counting). ``payload``
        (src, dst): vec3 rows (the partition's views) also copied in sorted order, dst[k] =
        src[order[k]] (positions read in cell order by a neighbour scan). ``after``: the tag of the
        solver's stage that may directly precede the counting stage worker by worker
        (``Solver.parallel``): the caller vouches that worker w's keys need only what worker w
        wrote in that stage (over the same shares ``part.chunk(w, n_items)``); the counting writes
        only its own keys, ranks and row of counts. ``blocks``: a ``polyphys.blocks.BlockQueue`` (CPU):
        the scatter is then a claimed stage over blocks of ``SCATTER_BLOCK`` items (each item's
        offset read from the row of the worker that counted it), so that a slower core's share of
        it goes to the other workers; the same places as the fixed shares. ``count`` (kernel, model,
        data), with ``blocks`` on CPU and several workers: the keys and counts too are a claimed stage
        (``claims_count``), the caller's ``kernel`` writing the keys of the blocks it claims and counting
        them (``polyphys.kernels.binsort.count_block``; ``count_claimed`` is the one for keys already
        in ``key``), launched with one thread per env as kernel(model..., n_items, claim, data...,
        outputs key, rank, counts, block counts, claim counters). Blocks of SCATTER_BLOCK items are
        taken two-ended: worker w the front of its home range, then the back of the next worker's, so
        each row of counts is one worker's, in ascending or in descending index (a back row's ranks
        count down from its run's end): the same order of every key's items whoever took what. ``keys``
        and ``after`` are then not used."""
        import warp as wp

        from .kernels import binsort as K
        from .kernels import blocks as B

        key, rank, order, start, counts, block_offsets, bcounts = self._views[part.index]
        ne, n, nk, nb = part.n_envs, self.n_items, self.n_keys, self.n_blocks

        def count_share(w):
            a, b = part.chunk(w, n)
            if keys is None:
                wp.launch(K.zero_counts, dim=(ne, nk), inputs=[w, 0], outputs=[counts])
            else:
                # row w is non-zero only at its items' keys of the last sort, still in ``key``
                if b > a:
                    wp.launch(K.clear_item_counts, dim=(ne, b - a), inputs=[w, a, key], outputs=[counts])
                keys(w, a, b)
            wp.launch(K.zero_counts, dim=(ne, nb), inputs=[w, 0], outputs=[bcounts])
            if b > a:
                wp.launch(K.count_keys, dim=(ne, b - a), inputs=[w, a, key], outputs=[rank, counts, bcounts])

        def scatter(w):
            a, b = part.chunk(w, n)
            if b <= a:
                return
            if payload is None or self.cuda:
                wp.launch(K.scatter_items, dim=(ne, b - a), inputs=[w, a, key, rank, counts], outputs=[order])
            else:
                wp.launch(K.scatter_items_vec3, dim=(ne, b - a), inputs=[w, a, key, rank, counts, payload[0]],
                          outputs=[order, payload[1]])

        two_ended = self.claims_count(part, blocks, count)

        def offsets(w):
            a, b = part.chunk(w, nb)
            if b > a:
                # this share's block offsets first (the items of the blocks before it summed again by
                # each worker: O(n_blocks) per worker, no serial launch and no barrier for it)
                wp.launch(K.scan_blocks, dim=ne, inputs=[a, b, bcounts], outputs=[block_offsets])
                wp.launch(K.scan_local, dim=(ne, b - a), inputs=[nk, a, int(two_ended), block_offsets, bcounts],
                          outputs=[counts, start])

        if two_ended:
            kernel, model, data = count
            claims = blocks.views(part)

            def claimed_count(w):
                # worker w's two rows are written by it alone: it clears them where its last sort left counts
                wp.launch(K.clear_rows, dim=ne, inputs=[w, part.workers], outputs=[counts, bcounts])
                wp.launch(kernel, dim=ne, inputs=[*model, n, B.claim_code(w, part.workers), *data],
                          outputs=[key, rank, counts, bcounts, claims])
                wp.launch(B.release, dim=ne, inputs=[part.workers], outputs=[claims])

            solver.parallel(part, claimed_count)
        else:
            solver.parallel(part, count_share, after=after)
        solver.parallel(part, offsets)
        if blocks is not None and not self.cuda:
            src, dst = payload if payload is not None else (self._no_payload, self._no_payload)
            flag = 0 if payload is None else 1
            blocks.stage(solver, part, -(-n // K.SCATTER_BLOCK), lambda threads, claim, claims: wp.launch(
                K.scatter_claimed, dim=(ne, threads),
                inputs=[part.workers, n, int(two_ended), claim, key, rank, counts, flag, src],
                outputs=[claims, order, dst]))
        else:
            solver.parallel(part, scatter)
        if self.cuda:
            wp.launch(K.sort_bins, dim=(ne, nk), inputs=[start], outputs=[order])
            if payload is not None:
                wp.launch(K.gather_vec3, dim=(ne, n), inputs=[order, payload[0]], outputs=[payload[1]])
