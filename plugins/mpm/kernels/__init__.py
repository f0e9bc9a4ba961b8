"""Warp kernels of the MPM solver, by stage: transfer.py (P2G with the constitutive models, G2P),
grid.py (grid clear and grid update with boundary conditions)."""
