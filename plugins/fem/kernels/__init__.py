"""Warp kernels of the FEM solver: ``elastic`` (constitutive models, explicit stage, boundary
conditions, stress/energy readbacks) and ``implicit`` (backward Euler: Newton, PCG, line search)."""
