"""Rotation helpers (NumPy, host side; quaternions (w, x, y, z), Hamilton product), shared by core,
the importers and the plugins — one definition of each.

``quat_mul``/``quat_rotate``/``quat_to_euler``/``euler_to_quat`` take arrays of any leading shape;
``quat_to_mat``/``mat_to_quat`` one rotation. Euler angles are extrinsic x-y-z (R = Rz·Ry·Rx), in
radians here (morphs take degrees: ``euler_deg_to_quat``).
"""

from __future__ import annotations

import math

import numpy as np


def quat_mul(a, b, dtype=float) -> np.ndarray:
    """Hamilton product a ⊗ b of (..., 4) quaternions, computed in ``dtype`` (None: the inputs')."""
    a, b = np.asarray(a, dtype=dtype), np.asarray(b, dtype=dtype)
    aw, ax, ay, az = np.moveaxis(a, -1, 0)
    bw, bx, by, bz = np.moveaxis(b, -1, 0)
    return np.stack([aw * bw - ax * bx - ay * by - az * bz,
                     aw * bx + ax * bw + ay * bz - az * by,
                     aw * by - ax * bz + ay * bw + az * bx,
                     aw * bz + ax * by - ay * bx + az * bw], axis=-1)


def quat_rotate(q, v, dtype=float) -> np.ndarray:
    """Rotate (..., 3) vectors by (..., 4) unit quaternions, computed in ``dtype`` (None: the inputs')."""
    q, v = np.asarray(q, dtype=dtype), np.asarray(v, dtype=dtype)
    w, u = q[..., :1], q[..., 1:]
    t = 2.0 * np.cross(u, v)
    return v + w * t + np.cross(u, t)


def quat_to_mat(q) -> np.ndarray:
    """Unit quaternion (w, x, y, z) -> 3x3 rotation matrix."""
    w, x, y, z = (float(v) for v in np.asarray(q, dtype=float).reshape(4))
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def mat_to_quat(m) -> tuple:
    """3x3 rotation matrix -> unit quaternion (w, x, y, z) with w >= 0 (Shepperd's method)."""
    m = np.asarray(m, dtype=float)
    tr = m[0, 0] + m[1, 1] + m[2, 2]
    if tr > 0:
        s = 2.0 * np.sqrt(tr + 1.0)
        q = [0.25 * s, (m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s]
    elif m[0, 0] > m[1, 1] and m[0, 0] > m[2, 2]:
        s = 2.0 * np.sqrt(1.0 + m[0, 0] - m[1, 1] - m[2, 2])
        q = [(m[2, 1] - m[1, 2]) / s, 0.25 * s, (m[0, 1] + m[1, 0]) / s, (m[0, 2] + m[2, 0]) / s]
    elif m[1, 1] > m[2, 2]:
        s = 2.0 * np.sqrt(1.0 + m[1, 1] - m[0, 0] - m[2, 2])
        q = [(m[0, 2] - m[2, 0]) / s, (m[0, 1] + m[1, 0]) / s, 0.25 * s, (m[1, 2] + m[2, 1]) / s]
    else:
        s = 2.0 * np.sqrt(1.0 + m[2, 2] - m[0, 0] - m[1, 1])
        q = [(m[1, 0] - m[0, 1]) / s, (m[0, 2] + m[2, 0]) / s, (m[1, 2] + m[2, 1]) / s, 0.25 * s]
    q = np.asarray(q)
    q = q / np.linalg.norm(q)
    if q[0] < 0:
        q = -q
    return tuple(float(v) for v in q)


def quat_to_euler(q) -> np.ndarray:
    """Unit quaternion -> extrinsic x-y-z angles (radians), R = Rz·Ry·Rx (lossy at pitch ±90°)."""
    q = np.asarray(q, dtype=float)
    w, x, y, z = np.moveaxis(q, -1, 0)
    rx = np.arctan2(2 * (w * x + y * z), 1 - 2 * (x * x + y * y))
    ry = np.arcsin(np.clip(2 * (w * y - z * x), -1.0, 1.0))
    rz = np.arctan2(2 * (w * z + x * y), 1 - 2 * (y * y + z * z))
    return np.stack([rx, ry, rz], axis=-1)


def euler_to_quat(e) -> np.ndarray:
    """Extrinsic x-y-z angles (radians, (..., 3)) -> unit quaternions (w, x, y, z)."""
    e = np.asarray(e, dtype=float)
    hx, hy, hz = np.moveaxis(e / 2.0, -1, 0)
    zero = np.zeros_like(hx)
    qx = np.stack([np.cos(hx), np.sin(hx), zero, zero], -1)
    qy = np.stack([np.cos(hy), zero, np.sin(hy), zero], -1)
    qz = np.stack([np.cos(hz), zero, zero, np.sin(hz)], -1)
    return quat_mul(qz, quat_mul(qy, qx))


def euler_deg_to_quat(euler_deg) -> tuple[float, float, float, float]:
    """Extrinsic x-y-z Euler angles in degrees (a morph's ``euler``) -> one quaternion (w, x, y, z)."""
    rx, ry, rz = (math.radians(a) / 2.0 for a in euler_deg)
    qx = (math.cos(rx), math.sin(rx), 0.0, 0.0)
    qy = (math.cos(ry), 0.0, math.sin(ry), 0.0)
    qz = (math.cos(rz), 0.0, 0.0, math.sin(rz))
    return quat_mul_tuple(qz, quat_mul_tuple(qy, qx))


def quat_mul_tuple(a, b) -> tuple:
    """``quat_mul`` of two single quaternions, as a tuple of Python floats."""
    aw, ax, ay, az = (float(v) for v in a)
    bw, bx, by, bz = (float(v) for v in b)
    return (aw * bw - ax * bx - ay * by - az * bz,
            aw * bx + ax * bw + ay * bz - az * by,
            aw * by - ax * bz + ay * bw + az * bx,
            aw * bz + ax * by - ay * bx + az * bw)


def to_world(pos, quat, local) -> np.ndarray:
    """Points (n, 3) given in the frame (pos, quat) -> world coordinates: local·Rᵀ + pos."""
    return np.asarray(local, dtype=float) @ quat_to_mat(quat).T + np.asarray(pos, dtype=float)
