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
        self.counts = wp.zeros((n, w, self.n_keys), dtype=wp.int32, device=dev)
        self.blocks = z((n, self.n_blocks))
        self.block_counts = wp.zeros((n, w, self.n_blocks), dtype=wp.int32, device=dev)
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

    def sort(self, solver, part, keys=None, payload=None, after=None, blocks=None) -> None:
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
        it goes to the other workers; the same places as the fixed shares."""
        import warp as wp

        from .kernels import binsort as K

        key, rank, order, start, counts, block_offsets, bcounts = self._views[part.index]
        ne, n, nk, nb = part.n_envs, self.n_items, self.n_keys, self.n_blocks

        def count(w):
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

        def offsets(w):
            a, b = part.chunk(w, nb)
            if b > a:
                # this share's block offsets first (the items of the blocks before it summed again by
                # each worker: O(n_blocks) per worker, no serial launch and no barrier for it)
                wp.launch(K.scan_blocks, dim=ne, inputs=[a, b, bcounts], outputs=[block_offsets])
                wp.launch(K.scan_local, dim=(ne, b - a), inputs=[nk, a, block_offsets, bcounts], outputs=[counts, start])

        def scatter(w):
            a, b = part.chunk(w, n)
            if b <= a:
                return
            if payload is None or self.cuda:
                wp.launch(K.scatter_items, dim=(ne, b - a), inputs=[w, a, key, rank, counts], outputs=[order])
            else:
                wp.launch(K.scatter_items_vec3, dim=(ne, b - a), inputs=[w, a, key, rank, counts, payload[0]],
                          outputs=[order, payload[1]])

        solver.parallel(part, count, after=after)
        solver.parallel(part, offsets)
        if blocks is not None and not self.cuda:
            src, dst = payload if payload is not None else (self._no_payload, self._no_payload)
            flag = 0 if payload is None else 1
            blocks.stage(solver, part, -(-n // K.SCATTER_BLOCK), lambda threads, claim, claims: wp.launch(
                K.scatter_claimed, dim=(ne, threads), inputs=[part.workers, n, claim, key, rank, counts, flag, src],
                outputs=[claims, order, dst]))
        else:
            solver.parallel(part, scatter)
        if self.cuda:
            wp.launch(K.sort_bins, dim=(ne, nk), inputs=[start], outputs=[order])
            if payload is not None:
                wp.launch(K.gather_vec3, dim=(ne, n), inputs=[order, payload[0]], outputs=[payload[1]])
