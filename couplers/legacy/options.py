"""Options of the Legacy coupler."""

import attrs
from polyphys.options import Options, in_range, positive, positive_int


@attrs.frozen(kw_only=True)
class LegacyOptions(Options):
    """influence_cutoff: a carrier outside a geom is coupled only while its SDF influence weight
    exp(-d/coup_softness) exceeds this (Genesis uses 0.1); inside (d <= 0) the weight is 1.

    Mesh geoms get a grid SDF built at build time in the geom frame (``polyphys.sdf_grid``):
    sdf_grid_res: cells along the longest side of the mesh's bounding box (spacing h = side / res);
    sdf_grid_spacing: an absolute spacing h in m instead (overrides sdf_grid_res). The interpolated
    distance is within (√3/2)·h of the exact one; choose h at most about half the particle
    spacing (MPM: half the grid cell) of the coupled solver."""

    influence_cutoff: float = attrs.field(default=0.1, validator=in_range(0.0, 1.0, hi_open=True))
    sdf_grid_res: int = attrs.field(default=32, validator=positive_int)
    sdf_grid_spacing: float | None = attrs.field(default=None,
                                                 validator=attrs.validators.optional(positive))
