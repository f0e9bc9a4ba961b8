"""Host-side helpers for batch-first Warp arrays: row views, masked env copies, finite checks."""

from __future__ import annotations

import numpy as np

from .errors import OptionError


def _wp():
    import warp as wp

    return wp


def scalar_type(arr):
    """The scalar type of a Warp array's dtype (float32 for vec3f, ...)."""
    return getattr(arr.dtype, "_wp_scalar_type_", arr.dtype)


def rows(arr, dtype=None):
    """A zero-copy 2D view (n_envs, words) of a contiguous batch-first array.

    ``dtype=None`` reinterprets as 32-bit words; otherwise as the given scalar type. The view keeps
    a reference to ``arr`` so the memory outlives it.
    """
    wp = _wp()
    if not arr.is_contiguous:
        raise ValueError("rows() needs a contiguous array")
    dtype = dtype or wp.uint32
    nbytes = arr.size * wp.types.type_size_in_bytes(arr.dtype)
    width = wp.types.type_size_in_bytes(dtype)
    n_envs = arr.shape[0]
    if n_envs == 0 or nbytes % (n_envs * width):
        raise ValueError(f"array of {nbytes} bytes does not split into {n_envs} rows of {width}-byte words")
    view = wp.array(ptr=arr.ptr, dtype=dtype, shape=(n_envs, nbytes // (n_envs * width)),
                    device=arr.device)
    view._polyphys_owner = arr
    return view


def copy_envs(dst, src, env_mask) -> None:
    """dst[env] = src[env] for every env whose mask is non-zero (one kernel launch)."""
    wp = _wp()
    from .kernels.envs import copy_env_rows

    if dst.shape != src.shape or dst.dtype != src.dtype:
        raise ValueError(f"copy_envs: shapes/dtypes differ: {dst.shape} {dst.dtype} vs {src.shape} "
                         f"{src.dtype}")
    if dst.size == 0:
        return
    d, s = rows(dst), rows(src)
    wp.launch(copy_env_rows, dim=d.shape, inputs=[env_mask, s], outputs=[d], device=dst.device)


def finite_check_views(arrs: list) -> list:
    """Scalar row views of the float arrays among ``arrs`` (ints and empty arrays are skipped)."""
    wp = _wp()
    out = []
    for arr in arrs:
        st = scalar_type(arr)
        if arr.size and st in (wp.float32, wp.float64):
            out.append(rows(arr, st))
    return out


NONFINITE_CHUNK = 64     # 64-byte vectors per thread of the finite check on CPU (4 KiB; flag_nonfinite)


def _nonfinite_parts(v) -> list:
    """(kernel, view) launches that check a 2D float view (rows may be strided, columns contiguous):
    its columns as 64-byte vectors, the few columns left over as scalars (core/kernels/envs.py)."""
    wp = _wp()
    from .kernels import envs as K

    cached = getattr(v, "_polyphys_nonfinite", None)
    if cached is not None:
        return cached
    if v.dtype == wp.float64:
        vec_kernel, vec_type, scalar_kernel = K.flag_nonfinite_vec8d, K.vec8d, K.flag_nonfinite_f64
    else:
        vec_kernel, vec_type, scalar_kernel = K.flag_nonfinite_vec16f, K.vec16f, K.flag_nonfinite_f32
    width = vec_type._length_
    n_envs, n = v.shape
    n_vec = n // width if v.strides[1] == wp.types.type_size_in_bytes(v.dtype) else 0
    out = []
    if n_vec:
        packed = wp.array(ptr=v.ptr, dtype=vec_type, shape=(n_envs, n_vec), strides=(v.strides[0], 64),
                          device=v.device)
        packed._polyphys_owner = v
        out.append((vec_kernel, packed))
    if n_vec * width < n:
        out.append((scalar_kernel, v[:, n_vec * width:] if n_vec else v))
    v._polyphys_nonfinite = out
    return out


def flag_nonfinite(views: list, flags) -> None:
    """flags[env] = 1 where any value of an env row of a view is NaN/inf (one or two launches per
    view). On CPU each thread checks a run of NONFINITE_CHUNK vectors; on CUDA one vector."""
    for v in views:
        chunk = NONFINITE_CHUNK if v.device.is_cpu else 1
        for kernel, arr in _nonfinite_parts(v):
            _wp().launch(kernel, dim=(arr.shape[0], (arr.shape[1] + chunk - 1) // chunk), inputs=[chunk, arr],
                         outputs=[flags], device=v.device)


def as_index_list(what: str, idx) -> np.ndarray:
    """``idx`` (an index or a sequence of them) as a flat array, or OptionError naming ``what``
    (ragged lists and objects numpy cannot hold are refused here; callers check the dtype and range)."""
    try:
        return np.asarray(idx).reshape(-1)
    except (TypeError, ValueError, OverflowError):
        raise OptionError(f"{what} = {short_repr(idx)}: expected an integer index or a 1D sequence of them") from None


def normalize_envs_idx(envs_idx, n_envs: int, batched: bool, what: str = "envs_idx") -> np.ndarray:
    """Validate envs_idx: None -> all envs; ints in [0, n_envs), no duplicates."""
    if envs_idx is None:
        return np.arange(n_envs, dtype=np.int64)
    if not batched:
        raise OptionError(f"{what} = {envs_idx!r}: the scene was built with n_envs=0 (no batch axis); "
                          f"omit {what}")
    try:
        idx = np.asarray(envs_idx)
    except (TypeError, ValueError, OverflowError):     # ragged lists, odd objects
        raise OptionError(f"{what} = {short_repr(envs_idx)}: expected a 1D sequence of integer env indices") from None
    if idx.ndim == 0:
        idx = idx.reshape(1)
    if idx.ndim != 1 or (idx.size and not np.issubdtype(idx.dtype, np.integer)):
        raise OptionError(f"{what} = {short_repr(envs_idx)}: expected a 1D sequence of integer env indices")
    idx = idx.astype(np.int64)
    bad = idx[(idx < 0) | (idx >= n_envs)]
    if bad.size:
        raise OptionError(f"{what} contains {bad.tolist()}: allowed env indices are 0..{n_envs - 1}")
    uniq, counts = np.unique(idx, return_counts=True)
    if (counts > 1).any():
        raise OptionError(f"{what} contains duplicates {uniq[counts > 1].tolist()}: each env at most once")
    return idx


def env_mask_array(envs_idx: np.ndarray, n_envs: int, device: str):
    wp = _wp()
    mask = np.zeros(n_envs, dtype=np.int32)
    mask[envs_idx] = 1
    return wp.array(mask, dtype=wp.int32, device=device)


def short_repr(value, limit: int = 80) -> str:
    """``repr(value)``, cut to ``limit`` characters (error messages name the value given)."""
    try:
        text = np.array2string(value, threshold=8, edgeitems=2) if isinstance(value, np.ndarray) else repr(value)
    except Exception:  # a value whose repr fails is still named by its type
        text = f"<{type(value).__name__}>"
    return text if len(text) <= limit else text[:limit - 3] + "..."


def as_numeric(name: str, value, dtype=float) -> np.ndarray:
    """``value`` as an array of ``dtype``, or ``OptionError`` naming ``name``, the value and what is
    wrong: not numbers (strings, dicts, None, objects), ragged nesting, complex numbers (the
    imaginary part would be lost), or for an integer ``dtype`` values that are not integers in its
    range (they would be truncated)."""
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError, OverflowError) as exc:      # ragged lists, odd objects
        raise OptionError(f"{name} = {short_repr(value)}: not an array of numbers ({exc})") from None
    kind = raw.dtype.kind
    if kind == "c":
        raise OptionError(f"{name} = {short_repr(value)}: complex numbers are not allowed (the imaginary part "
                          f"would be lost); give real numbers")
    if kind not in "biuf":
        if kind == "O" and raw.ndim == 0:
            what = "None" if value is None else f"a {type(value).__name__}"
        else:
            what = {"U": "strings", "S": "bytes", "O": "objects (or integers too large for 64 bits)",
                    "M": "datetimes", "m": "timedeltas", "V": "records"}.get(kind, str(raw.dtype))
        raise OptionError(f"{name} = {short_repr(value)}: expected real numbers, got {what}")
    target = np.dtype(dtype)
    if target.kind == "b" and kind != "b":
        with np.errstate(invalid="ignore"):
            if not np.all((raw == 0) | (raw == 1)):
                bad = raw[~((raw == 0) | (raw == 1))].ravel()[0]
                raise OptionError(f"{name} = {short_repr(value)}: {bad.item()!r} is not a boolean (True/False or 1/0)")
    if target.kind in "iu" and kind in "biuf":
        info = np.iinfo(target)
        with np.errstate(invalid="ignore"):
            ok = (raw == np.round(raw)) & (raw >= info.min) & (raw <= info.max) if kind == "f" else \
                (raw >= info.min) & (raw <= info.max)
        if not np.all(ok):
            bad = raw[~np.asarray(ok)].ravel()[0]
            raise OptionError(f"{name} = {short_repr(value)}: {bad.item()!r} is not an integer in "
                              f"[{info.min}, {info.max}]")
    with np.errstate(over="ignore", invalid="ignore"):
        return raw.astype(target)


def check_shape(name: str, value, expected: tuple, dtype=float, storage=None, shown=None) -> np.ndarray:
    """Convert ``value`` to an array of exactly ``expected`` shape, or raise naming both shapes.

    Float values must be finite; with ``storage`` (the dtype the value is stored in, e.g. float32)
    also finite in that precision: 1e300 is a float64 number but inf in float32, so it is refused
    here rather than stored as inf. ``shown``: the value to name in messages (default ``value``)."""
    text = short_repr(value if shown is None else shown)
    arr = as_numeric(name, value, dtype)
    if arr.shape != tuple(expected):
        raise OptionError(f"{name} has shape {arr.shape}; expected {tuple(expected)} ({name} = {text})")
    if np.issubdtype(arr.dtype, np.floating) and not np.all(np.isfinite(arr)):
        bad = np.argwhere(~np.isfinite(arr))[:5].tolist()
        raise OptionError(f"{name} = {text}: NaN/inf at {bad}; values must be finite")
    if storage is not None and np.issubdtype(arr.dtype, np.floating):
        big = float(np.finfo(storage).max)
        over = np.abs(arr) > big
        if over.any():
            at = np.argwhere(over)[0]
            raise OptionError(f"{name} = {text}: {arr[tuple(at)].item()!r} at index {tuple(at.tolist())} is outside "
                              f"the {np.dtype(storage).name} range of this scene's state (|x| <= {big:.4g}; "
                              f"SimOptions(precision=...)): values must be finite in the storage precision")
    return arr


def env_slice(arr, start: int, stop: int):
    """``arr[start:stop]`` along the batch axis, also for arrays with a zero-length axis (which
    Warp cannot slice: an empty array of the partition's shape stands in for it)."""
    if arr.size == 0:
        wp = _wp()
        return wp.zeros((stop - start, *arr.shape[1:]), dtype=arr.dtype, device=arr.device)
    return arr[start:stop]


def write_env_rows(arr, envs: np.ndarray, cols, values: np.ndarray) -> None:
    """arr[envs, cols] = values for a batch-first Warp array, in place (a host round trip: for
    setters outside the step; graphs keep pointing at the same memory). cols: a slice or an index
    array of the second axis."""
    host = arr.numpy()
    host[np.asarray(envs)[:, None], np.arange(host.shape[1])[cols]] = values
    arr.assign(host)
