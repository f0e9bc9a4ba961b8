"""Warp kernels of the PBD solver, one module per stage: ``integrate`` (prediction, velocity update,
boundaries), ``constraints`` (XPBD mesh constraints and shape matching), ``neighbors`` (the per-env
grid, particle contacts and position-based fluids)."""
