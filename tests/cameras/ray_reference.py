"""Float64 reference ray casting for the camera tests: analytic ray–primitive distances (entering
surface only, as the ray tracer documents), brute-force spheres and triangles, the world geoms of a
scene's rigid entities from their public getters, and pinhole rays."""

from __future__ import annotations

import numpy as np

INF = np.inf


def quat_rot(q):
    w, x, y, z = np.asarray(q, float) / np.linalg.norm(q)
    return np.array([[1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
                     [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
                     [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)]])


def pinhole(K, w, h, pos, R, du=0.0, dv=0.0):
    """World origins (n, 3), unit directions (n, 3) and the optical-axis cosine (n,) of the pixel rays
    (centres shifted by (du, dv) pixels), row-major."""
    u, v = np.meshgrid(np.arange(w) + 0.5 + du, np.arange(h) + 0.5 + dv)
    pix = np.stack([u.ravel(), v.ravel(), np.ones(w * h)], 1)
    dl = pix @ np.linalg.inv(K).T
    dl /= np.linalg.norm(dl, axis=1, keepdims=True)
    return np.tile(pos, (len(dl), 1)), dl @ np.asarray(R).T, dl[:, 2]


def _local(o, d, c, R):
    return (o - c) @ R, d @ R


def t_plane(o, d, c, R, size=(0.0, 0.0)):
    ol, dl = _local(o, d, c, R)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = -ol[:, 2] / dl[:, 2]
    ok = (ol[:, 2] > 0) & (dl[:, 2] < 0)
    p = ol + dl * t[:, None]
    if size[0] > 0:
        ok &= np.abs(p[:, 0]) <= size[0]
    if size[1] > 0:
        ok &= np.abs(p[:, 1]) <= size[1]
    return np.where(ok, t, INF)


def _sphere_local(ol, dl, r):
    b = np.sum(ol * dl, 1)
    a = np.sum(dl * dl, 1)
    cr = np.cross(ol, dl)
    disc = a * r * r - np.sum(cr * cr, 1)
    with np.errstate(invalid="ignore"):
        t = (-b - np.sqrt(disc)) / a
    return np.where((disc >= 0) & (t >= 0) & (b <= 0), t, INF)


def t_sphere(o, d, c, R, r):
    ol, dl = _local(o, d, c, R)
    return _sphere_local(ol, dl, r)


def t_ellipsoid(o, d, c, R, radii):
    ol, dl = _local(o, d, c, R)
    return _sphere_local(ol / radii, dl / radii, 1.0)


def _side(ol, dl, r, hl):
    a = dl[:, 0] ** 2 + dl[:, 1] ** 2
    b = ol[:, 0] * dl[:, 0] + ol[:, 1] * dl[:, 1]
    cr = ol[:, 0] * dl[:, 1] - ol[:, 1] * dl[:, 0]
    disc = a * r * r - cr * cr
    with np.errstate(invalid="ignore", divide="ignore"):
        t = (-b - np.sqrt(disc)) / a
    z = ol[:, 2] + t * dl[:, 2]
    return np.where((a > 1e-24) & (disc >= 0) & (t >= 0) & (b <= 0) & (np.abs(z) <= hl), t, INF)


def t_capsule(o, d, c, R, r, hl):
    ol, dl = _local(o, d, c, R)
    e = np.array([0.0, 0.0, hl])
    return np.minimum(_side(ol, dl, r, hl), np.minimum(_sphere_local(ol - e, dl, r), _sphere_local(ol + e, dl, r)))


def t_cylinder(o, d, c, R, r, hl):
    ol, dl = _local(o, d, c, R)
    t = _side(ol, dl, r, hl)
    for s in (1.0, -1.0):
        with np.errstate(divide="ignore", invalid="ignore"):
            tc = (s * hl - ol[:, 2]) / dl[:, 2]
        p = ol + dl * tc[:, None]
        ok = (s * ol[:, 2] > hl) & (s * dl[:, 2] < 0) & (p[:, 0] ** 2 + p[:, 1] ** 2 <= r * r)
        t = np.minimum(t, np.where(ok, tc, INF))
    return t


def t_box(o, d, c, R, half):
    ol, dl = _local(o, d, c, R)
    with np.errstate(divide="ignore", invalid="ignore"):
        t1 = (-half - ol) / dl
        t2 = (half - ol) / dl
    lo = np.where(np.abs(dl) < 1e-300, np.where(np.abs(ol) <= half, -INF, INF), np.minimum(t1, t2))
    hi = np.where(np.abs(dl) < 1e-300, np.where(np.abs(ol) <= half, INF, -INF), np.maximum(t1, t2))
    tn, tf = lo.max(1), hi.min(1)
    return np.where((tn <= tf) & (tn >= 0), tn, INF)


def t_spheres(o, d, centers, radii, chunk=256):
    """Closest entering hit over many spheres (brute force): (t, index)."""
    n = len(o)
    best, idx = np.full(n, INF), np.full(n, -1)
    for k in range(0, len(centers), chunk):
        C = centers[k:k + chunk]
        oc = o[:, None, :] - C[None]
        b = np.einsum("nkj,nj->nk", oc, d)
        cr = np.cross(oc, d[:, None, :])
        disc = radii[k:k + chunk][None] ** 2 - np.sum(cr * cr, 2)
        with np.errstate(invalid="ignore"):
            t = -b - np.sqrt(disc)
        t = np.where((disc >= 0) & (t >= 0) & (b <= 0), t, INF)
        j = t.argmin(1)
        tj = t[np.arange(n), j]
        better = tj < best
        best[better], idx[better] = tj[better], k + j[better]
    return best, idx


def t_triangles(o, d, V, F, chunk=512):
    """Closest hit over triangles, two-sided (Möller–Trumbore in float64): (t, index)."""
    n = len(o)
    best, idx = np.full(n, INF), np.full(n, -1)
    for k in range(0, len(F), chunk):
        f = F[k:k + chunk]
        a, b, c = V[f[:, 0]], V[f[:, 1]], V[f[:, 2]]
        e1, e2 = (b - a)[None], (c - a)[None]
        p = np.cross(d[:, None, :], e2)
        det = np.sum(e1 * p, 2)
        with np.errstate(divide="ignore", invalid="ignore"):
            inv = 1.0 / det
            s = o[:, None, :] - a[None]
            u = np.sum(s * p, 2) * inv
            q = np.cross(s, e1)
            v = np.sum(d[:, None, :] * q, 2) * inv
            t = np.sum(e2 * q, 2) * inv
        ok = (np.abs(det) > 1e-300) & (u >= 0) & (u <= 1) & (v >= 0) & (u + v <= 1) & (t >= 0)
        t = np.where(ok, t, INF)
        j = t.argmin(1)
        tj = t[np.arange(n), j]
        better = tj < best
        best[better], idx[better] = tj[better], k + j[better]
    return best, idx


def rigid_shapes(scene):
    """Every drawn geom of the scene's rigid-side entities, world frame now, from public getters:
    [(name "entity/geom", entity uid, "entity/link", type, size, centre, R)]."""
    out = []
    for e in scene.entities:
        desc = getattr(e, "description", None)
        if desc is None or not callable(getattr(e, "get_links_pos", None)):
            continue
        lp = np.asarray(e.get_links_pos(), float).reshape(-1, 3) if not scene.batched else None
        lq = np.asarray(e.get_links_quat(), float).reshape(-1, 4) if not scene.batched else None
        for gi, g in enumerate(desc.geoms):
            if g.role == "collision" or g.group >= 3:
                continue
            Rl = quat_rot(lq[g.link])
            c = lp[g.link] + Rl @ np.asarray(g.pos, float)
            R = Rl @ quat_rot(g.quat)
            out.append((f"{e.name}/{g.name or f'geom{gi}'}", e.uid, f"{e.name}/{desc.links[g.link].name}", g.type,
                        np.asarray(tuple(g.size) + (0.0, 0.0, 0.0), float)[:3], c, R))
    return out


def t_shape(o, d, shape):
    _, _, _, typ, size, c, R = shape
    if typ == "plane":
        return t_plane(o, d, c, R, size)
    if typ == "sphere":
        return t_sphere(o, d, c, R, size[0])
    if typ == "ellipsoid":
        return t_ellipsoid(o, d, c, R, size)
    if typ == "box":
        return t_box(o, d, c, R, size)
    if typ == "capsule":
        return t_capsule(o, d, c, R, size[0], size[1])
    if typ == "cylinder":
        return t_cylinder(o, d, c, R, size[0], size[1])
    raise ValueError(typ)


def closest(o, d, shapes):
    """(t (n,), shape index (n,) or -1) of the closest analytic shape along each ray."""
    T = np.stack([t_shape(o, d, s) for s in shapes], 1)
    j = T.argmin(1)
    t = T[np.arange(len(o)), j]
    return t, np.where(np.isfinite(t), j, -1)


def unambiguous(K, w, h, pos, R, shapes, delta=1e-3):
    """Pixels whose closest shape is the same for the pixel centre and its centre moved by ±delta
    pixels in u and v (elsewhere a silhouette passes within delta pixels: float32 may go either way)."""
    _, j0 = closest(*pinhole(K, w, h, pos, R)[:2], shapes)
    ok = np.ones(w * h, bool)
    for du, dv in ((delta, 0), (-delta, 0), (0, delta), (0, -delta)):
        _, j = closest(*pinhole(K, w, h, pos, R, du, dv)[:2], shapes)
        ok &= j == j0
    return ok
