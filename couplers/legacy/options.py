"""Options of the Legacy coupler."""

import attrs
from polyphys.options import in_range


@attrs.frozen(kw_only=True)
class LegacyOptions:
    """influence_cutoff: a carrier outside a geom is coupled only while its SDF influence weight
    exp(-d/coup_softness) exceeds this (Genesis uses 0.1); inside (d <= 0) the weight is 1."""

    influence_cutoff: float = attrs.field(default=0.1, validator=in_range(0.0, 1.0, hi_open=True))
