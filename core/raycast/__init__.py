"""Ray casting over everything a scene holds, batched over envs, in Warp kernels (docs/cameras.md).

One ray tracer serves the ray-casting sensors of ``polyphys.plugins.sensors`` (raycaster,
rangefinder, depth_camera, camera), videos of ``polyphys run`` and ``polyphys render``: rigid
primitives analytically, meshes and heightfields through ``wp.Mesh``, particles as spheres through a
hash grid, cloth and FEM surfaces as triangles. It reads solvers through core's view protocols only.

Importing this package imports no Warp module; kernels load when a scene first casts rays.
"""

from .camera import Camera, Light, RaySpec, Shading, intrinsics, lookat_rot, make_shading, pinhole_dirs, to_uint8
from .media import write_png

__all__ = ["Camera", "Light", "RaySpec", "Shading", "intrinsics", "lookat_rot", "make_shading", "pinhole_dirs",
           "to_uint8", "write_png"]
