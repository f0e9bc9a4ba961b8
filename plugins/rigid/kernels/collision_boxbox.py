"""Box–box contacts as MuJoCo 4.0 computes them (docs/collision.md, "Box–box in MuJoCo-compatible mode"):
the collider of the MuJoCo-compatible narrowphase (collision_box.narrowphase_box_mujoco). Functions
only, generic over precision; the kernels live in collision_box.py.

Stage 1, separating axes: the 3 face axes of each box, then the 9 edge-cross axes; an edge axis wins
only when its separation beats the best face axis by a relative bias (1e-6), and a winning edge axis
within ~8° of the best face axis (|cos| > 0.99) that is not 5 % deeper gives way to the face. The first
axis separating the boxes by more than the margin ends the test (no contact; the axes after it cannot
change that).
Stage 2, face axis: the incident face (the face of the other box most opposed to the reference normal)
is clipped against the four side planes of the reference face (Sutherland–Hodgman, depth carried as
an attribute); every clipped vertex within the margin is a contact (near-duplicates within 1e-7 of
the face size dropped), at the vertex's in-plane position and midway between the reference face and
the incident surface along the normal, with the vertex's signed distance. Edge axis: one contact at
the midpoint of the closest points of the two supporting edges (both sign choices tried where an axis
component is within 1e-9 of zero), distance along the axis. The normal points from geom 1 to geom 2.
"""

from typing import Any

import warp as wp

wp.set_module_options({"enable_backward": False})

MAXVERT = 12          # a quadrilateral clipped by 4 half-planes has at most 8 vertices; slack for round-off


@wp.func
def _clip_half(poly: Any, nin: int, coord: int, sign: Any, limit: Any):
    """Keep the part of the polygon (rows 0..nin-1, (x, y, z) with z an attribute) where
    sign * v[coord] <= limit; unchanged when every vertex is inside."""
    zero = limit - limit
    inside = int(1)
    for k in range(nin):
        if sign * poly[k][coord] - limit > zero:
            inside = 0
    if inside == 1:
        return poly, nin
    out = poly * zero
    nout = int(0)
    for k in range(nin):
        k1 = k + 1
        if k1 == nin:
            k1 = 0
        p = poly[k]
        q = poly[k1]
        dp = sign * p[coord] - limit
        dq = sign * q[coord] - limit
        if dp <= zero and nout < MAXVERT:
            out[nout] = p
            nout += 1
        if (dp < zero) != (dq < zero) and dp != dq and nout < MAXVERT:
            t = dp / (dp - dq)
            out[nout] = p + (q - p) * t
            nout += 1
    return out, nout


@wp.func
def box_box_mujoco(pos1: Any, rot1: Any, size1: Any, pos2: Any, rot2: Any, size2: Any, margin: Any):
    """Box 1 against box 2 (module docstring). Returns (count, normal geom 1 → geom 2, points
    (MAXVERT, 3), signed distances (MAXVERT,))."""
    zero = margin - margin
    one = zero + type(zero)(1.0)
    half = type(zero)(0.5)
    minval = type(zero)(1e-15)
    pts = wp.matrix(shape=(MAXVERT, 3), dtype=type(zero))
    dst = wp.vector(length=MAXVERT, dtype=type(zero))
    nrm = wp.vector(zero, zero, one)
    cnt = int(0)
    p21 = wp.transpose(rot1) * (pos2 - pos1)
    p12 = wp.transpose(rot2) * (pos1 - pos2)
    rot = wp.transpose(rot1) * rot2
    # stage 1: face axes of box 1, of box 2, then edge-cross axes
    sep_best = type(zero)(-1.0e300)
    if one + type(zero)(1e-10) == one:
        sep_best = type(zero)(-3.0e38)          # float32
    code = int(-1)
    for i in range(3):
        r2 = (wp.abs(rot[i][0]) * size2[0] + wp.abs(rot[i][1]) * size2[1]) + wp.abs(rot[i][2]) * size2[2]
        sep = wp.abs(p21[i]) - size1[i] - r2
        if sep > margin:
            return cnt, nrm, pts, dst           # separated along this axis: no contact
        if sep > sep_best:
            sep_best = sep
            code = i
    for j in range(3):
        r1 = (wp.abs(rot[0][j]) * size1[0] + wp.abs(rot[1][j]) * size1[1]) + wp.abs(rot[2][j]) * size1[2]
        sep = wp.abs(p12[j]) - size2[j] - r1
        if sep > margin:
            return cnt, nrm, pts, dst           # separated along this axis: no contact
        if sep > sep_best:
            sep_best = sep
            code = 3 + j
    sep_face = sep_best
    code_face = code
    for i in range(3):
        for j in range(3):
            i1 = (i + 1) % 3
            i2 = (i + 2) % 3
            a1 = -rot[i2][j]
            a2 = rot[i1][j]
            n2 = a1 * a1 + a2 * a2
            if n2 >= type(zero)(1e-16):
                inv = one / wp.sqrt(n2)
                a1 = a1 * inv
                a2 = a2 * inv
                rr1 = size1[i1] * wp.abs(a1) + size1[i2] * wp.abs(a2)
                j1 = (j + 1) % 3
                j2 = (j + 2) % 3
                b1 = a1 * rot[i1][j1] + a2 * rot[i2][j1]
                b2 = a1 * rot[i1][j2] + a2 * rot[i2][j2]
                rr2 = size2[j1] * wp.abs(b1) + size2[j2] * wp.abs(b2)
                sep = wp.abs(a1 * p21[i1] + a2 * p21[i2]) - rr1 - rr2
                if sep > margin:
                    return cnt, nrm, pts, dst   # separated
                if sep - type(zero)(1e-6) * wp.abs(sep) > sep_best and sep > sep_face:
                    sep_best = sep
                    code = 6 + 3 * i + j
    if code < 0:
        return cnt, nrm, pts, dst
    # an edge axis within ~8 degrees of the best face axis and not 5 % deeper gives way to the face
    if code >= 6:
        i = (code - 6) // 3
        j = (code - 6) % 3
        ax = wp.vector(zero, zero, zero)
        ax[(i + 1) % 3] = -rot[(i + 2) % 3][j]
        ax[(i + 2) % 3] = rot[(i + 1) % 3][j]
        ax = wp.normalize(ax)
        fd = zero
        if code_face < 3:
            fd = wp.abs(ax[code_face])
        else:
            f = code_face - 3
            fd = wp.abs((ax[0] * rot[0][f] + ax[1] * rot[1][f]) + ax[2] * rot[2][f])
        if fd > type(zero)(0.99) and sep_best < sep_face + type(zero)(0.05) * wp.abs(sep_face) + minval:
            code = code_face
            sep_best = sep_face
    if code >= 6:
        # stage 2a: edge-edge, one point
        i = (code - 6) // 3
        j = (code - 6) % 3
        i1 = (i + 1) % 3
        i2 = (i + 2) % 3
        j1 = (j + 1) % 3
        j2 = (j + 2) % 3
        ax = wp.vector(zero, zero, zero)
        ax[i1] = -rot[i2][j]
        ax[i2] = rot[i1][j]
        ax = wp.normalize(ax)
        if wp.dot(ax, p21) < zero:
            ax = -ax
        a2v = wp.transpose(rot) * ax
        amb = type(zero)(1e-9)
        amb1 = int(-1)
        if wp.abs(ax[i1]) < amb:
            amb1 = i1
        elif wp.abs(ax[i2]) < amb:
            amb1 = i2
        amb2 = int(-1)
        if wp.abs(a2v[j1]) < amb:
            amb2 = j1
        elif wp.abs(a2v[j2]) < amb:
            amb2 = j2
        d2 = wp.vector(rot[0][j], rot[1][j], rot[2][j])
        b = d2[i]
        den = one - b * b
        best = type(zero)(1.0e300)
        if one + type(zero)(1e-10) == one:
            best = type(zero)(3.0e38)
        w1 = p21 * zero
        w2 = p21 * zero
        n1 = 1
        if amb1 >= 0:
            n1 = 2
        n2v = 1
        if amb2 >= 0:
            n2v = 2
        for v1 in range(n1):
            for v2 in range(n2v):
                c1 = wp.vector(zero, zero, zero)
                c1[i1] = size1[i1]
                if ax[i1] < zero:
                    c1[i1] = -size1[i1]
                c1[i2] = size1[i2]
                if ax[i2] < zero:
                    c1[i2] = -size1[i2]
                if amb1 >= 0 and v1 == 1:
                    c1[amb1] = -c1[amb1]
                cc = wp.vector(zero, zero, zero)
                cc[j1] = size2[j1]
                if a2v[j1] >= zero:
                    cc[j1] = -size2[j1]
                cc[j2] = size2[j2]
                if a2v[j2] >= zero:
                    cc[j2] = -size2[j2]
                if amb2 >= 0 and v2 == 1:
                    cc[amb2] = -cc[amb2]
                c2 = rot * cc + p21
                e = c2 - c1
                d1e = e[i]
                d2e = wp.dot(d2, e)
                s = zero
                if den >= minval:
                    s = (d1e - b * d2e) / den
                s = wp.clamp(s, -size1[i], size1[i])
                t = wp.clamp(b * s - d2e, -size2[j], size2[j])
                s = wp.clamp(d1e + b * t, -size1[i], size1[i])
                es = wp.vector(zero, zero, zero)
                es[i] = s
                q1 = c1 + es
                q2 = c2 + d2 * t
                g = q2 - q1
                gg = wp.dot(g, g)
                if gg < best:
                    best = gg
                    w1 = q1
                    w2 = q2
        dist = wp.dot(w2 - w1, ax)
        if dist <= margin:
            mid = (w1 + w2) * half
            pts[0] = rot1 * mid + pos1
            dst[0] = dist
            nrm = rot1 * ax
            cnt = 1
        return cnt, nrm, pts, dst
    # stage 2b: face; reference box = owner of the face, incident box = the other
    ref1 = code < 3
    a = code
    sref = size1
    sinc = size2
    pref = pos1
    mref = rot1
    posoi = p21
    rinc = rot
    if not ref1:
        a = code - 3
        sref = size2
        sinc = size1
        pref = pos2
        mref = rot2
        posoi = p12
        rinc = wp.transpose(rot)
    sgn = one
    if posoi[a] < zero:
        sgn = -one
    binc = int(0)
    for k in range(1, 3):
        if wp.abs(rinc[a][k]) > wp.abs(rinc[a][binc]):
            binc = k
    tinc = one
    if sgn * rinc[a][binc] > zero:
        tinc = -one
    axx = (a + 1) % 3
    ayy = (a + 2) % 3
    bu = (binc + 1) % 3
    bv = (binc + 2) % 3
    cx = wp.vector(zero, zero, zero)
    du = wp.vector(zero, zero, zero)
    dv = wp.vector(zero, zero, zero)
    for r in range(3):
        c = a
        if r == 0:
            c = axx
        elif r == 1:
            c = ayy
        cx[r] = posoi[c] + tinc * sinc[binc] * rinc[c][binc]
        du[r] = sinc[bu] * rinc[c][bu]
        dv[r] = sinc[bv] * rinc[c][bv]
    cx[2] = sgn * cx[2] - sref[a]
    du[2] = du[2] * sgn
    dv[2] = dv[2] * sgn
    poly = wp.matrix(shape=(MAXVERT, 3), dtype=type(zero))
    for k in range(4):
        su = one
        sv = one
        if k == 1 or k == 2:
            su = -one
        if k >= 2:
            sv = -one
        poly[k] = wp.vector(cx[0] + su * du[0] + sv * dv[0], cx[1] + su * du[1] + sv * dv[1],
                            cx[2] + su * du[2] + sv * dv[2])
    nv = int(4)
    poly, nv = _clip_half(poly, nv, 0, one, sref[axx])
    poly, nv = _clip_half(poly, nv, 0, -one, sref[axx])
    poly, nv = _clip_half(poly, nv, 1, one, sref[ayy])
    poly, nv = _clip_half(poly, nv, 1, -one, sref[ayy])
    dupe2 = type(zero)(1e-14) * (sref[axx] * sref[axx] + sref[ayy] * sref[ayy])
    nsgn = sgn
    if not ref1:
        nsgn = -sgn
    nrm = wp.vector(mref[0][a], mref[1][a], mref[2][a]) * nsgn
    acc = poly * zero                     # accepted vertices, reference-face coordinates
    for k in range(nv):
        v = poly[k]
        if v[2] <= margin:
            dupe = int(0)
            for q in range(cnt):
                dx = acc[q][0] - v[0]
                dy = acc[q][1] - v[1]
                if dx * dx + dy * dy < dupe2:
                    dupe = 1
            if dupe == 0:
                acc[cnt] = v
                pc = wp.vector(zero, zero, zero)
                pc[axx] = v[0]
                pc[ayy] = v[1]
                pc[a] = sgn * (sref[a] + half * v[2])
                pts[cnt] = mref * pc + pref
                dst[cnt] = v[2]
                cnt += 1
    return cnt, nrm, pts, dst
