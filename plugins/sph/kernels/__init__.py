"""Warp kernels of the SPH solver: ``grid`` (per-env counting-sort neighbour grid and deterministic
per-env reductions) and ``fluid`` (kernels W, densities, forces, pressure solves, integration)."""
