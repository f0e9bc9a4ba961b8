"""Optional dependencies: imported only when used, with an error naming the extra that installs them."""

from __future__ import annotations

import importlib

from ..errors import PolyphysError


class MissingExtraError(PolyphysError, ImportError):
    """An optional part of polyphys is used without the extra that installs its dependency."""


def require(module: str, extra: str):
    """Import ``module`` or raise MissingExtraError naming ``pip install 'polyphys[extra]'``."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingExtraError(f"this needs the optional extra {extra!r}: pip install 'polyphys[{extra}]' "
                                f"({module} could not be imported: {exc})") from None
