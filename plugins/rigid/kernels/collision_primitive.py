"""Analytic narrowphase routines for primitive pairs (Warp functions, generic over precision).

Every routine follows MuJoCo's conventions internally: geom 1 has the lower type code, the normal
points from geom 1 to geom 2, ``dist`` is the signed distance (negative = penetration) and the
contact point lies midway between the two surfaces. The pipeline (collision_driver.py) flips the
normal to the polyphys convention (B→A) when it writes contacts.

Each routine takes (pos1, rot1, size1, pos2, rot2, size2, margin) — world position, world rotation
matrix (columns are the geom axes) and MuJoCo half sizes — and returns
``(n, normal, points, dists)``: the number of contact points (at most 8), the shared normal, an
8×3 matrix of points and an 8-vector of signed distances. Only points with dist < margin are kept.
A zero count means "no contact within the margin".

Geometry conventions (polyphys.description): plane = z=0 plane of its frame, normal +z; sphere (r);
capsule / cylinder (r, half length) along z; box (hx, hy, hz); ellipsoid (rx, ry, rz).
"""

from typing import Any

import warp as wp

MAXPTS = 8


@wp.func
def _col(m: Any, i: int):
    return wp.vector(m[0, i], m[1, i], m[2, i])


@wp.func
def _empty(p: Any):
    """Zero contact set of the precision of ``p`` (a vec3)."""
    z = p[0] - p[0]
    pts = wp.matrix(shape=(8, 3), dtype=type(z))
    d = wp.vector(length=8, dtype=type(z))
    return pts, d


@wp.func
def _any_perp(n: Any):
    """A unit vector perpendicular to the unit vector n."""
    one = type(n[0])(1.0)
    zero = type(n[0])(0.0)
    a = wp.vector(one, zero, zero)
    if wp.abs(n[0]) > type(n[0])(0.57):
        a = wp.vector(zero, one, zero)
    return wp.normalize(wp.cross(n, a))


@wp.func
def _sphere_sphere_raw(p1: Any, r1: Any, p2: Any, r2: Any):
    """Normal (1→2), dist and midpoint of two spheres."""
    d = p2 - p1
    ln = wp.length(d)
    one = type(r1)(1.0)
    zero = type(r1)(0.0)
    n = wp.vector(one, zero, zero)
    if ln > zero:
        n = d / ln
    dist = ln - r1 - r2
    pos = p1 + n * (r1 + type(r1)(0.5) * dist)
    return n, dist, pos


@wp.func
def plane_cylinder(pos1: Any, rot1: Any, size1: Any, pos2: Any, rot2: Any, size2: Any,
                   margin: Any):
    """Up to 4 points: the deepest rim point of the disk nearer the plane, the rim point below it on
    the other disk, and two more points of the near rim at ±90° (a face contact when the cylinder
    stands on the plane, a line contact when it lies on its side)."""
    pts, d = _empty(pos1)
    n = _col(rot1, 2)
    r = size2[0]
    hl = size2[1]
    ax = _col(rot2, 2)
    zero = type(r)(0.0)
    half = type(r)(0.5)
    # axis pointing towards the plane (into -n)
    if wp.dot(ax, n) > zero:
        ax = -ax
    # radial direction in the disk plane pointing most into -n
    rad = -n - ax * wp.dot(-n, ax)
    lr = wp.length(rad)
    if lr > type(r)(1e-12):
        rad = rad / lr
    else:
        rad = _any_perp(ax)
    side = wp.cross(ax, rad)
    near = pos2 + ax * hl
    far = pos2 - ax * hl
    cnt = int(0)
    for k in range(4):
        c = near + rad * r
        if k == 1:
            c = far + rad * r
        elif k == 2:
            c = near + side * r
        elif k == 3:
            c = near - side * r
        dist = wp.dot(c - pos1, n)
        if dist < margin:
            pts[cnt] = c - n * (half * dist)
            d[cnt] = dist
            cnt += 1
    return cnt, n, pts, d


@wp.func
def plane_ellipsoid(pos1: Any, rot1: Any, size1: Any, pos2: Any, rot2: Any, size2: Any,
                    margin: Any):
    """The support point of the ellipsoid in -n (exact)."""
    pts, d = _empty(pos1)
    n = _col(rot1, 2)
    nl = wp.transpose(rot2) * n                              # normal in the ellipsoid frame
    sn = wp.vector(size2[0] * nl[0], size2[1] * nl[1], size2[2] * nl[2])
    den = wp.length(sn)
    loc = -wp.vector(size2[0] * sn[0], size2[1] * sn[1], size2[2] * sn[2]) / den
    c = pos2 + rot2 * loc
    dist = wp.dot(c - pos1, n)
    cnt = int(0)
    if dist < margin:
        pts[0] = c - n * (type(den)(0.5) * dist)
        d[0] = dist
        cnt = 1
    return cnt, n, pts, d


@wp.func
def sphere_sphere(pos1: Any, rot1: Any, size1: Any, pos2: Any, rot2: Any, size2: Any, margin: Any):
    pts, d = _empty(pos1)
    n, dist, pos = _sphere_sphere_raw(pos1, size1[0], pos2, size2[0])
    cnt = int(0)
    if dist < margin:
        pts[0] = pos
        d[0] = dist
        cnt = 1
    return cnt, n, pts, d


@wp.func
def _closest_on_segment(a: Any, b: Any, p: Any):
    ab = b - a
    den = wp.dot(ab, ab)
    t = type(den)(0.0)
    if den > type(den)(0.0):
        t = wp.clamp(wp.dot(p - a, ab) / den, type(den)(0.0), type(den)(1.0))
    return a + ab * t


@wp.func
def sphere_capsule(pos1: Any, rot1: Any, size1: Any, pos2: Any, rot2: Any, size2: Any,
                   margin: Any):
    pts, d = _empty(pos1)
    ax = _col(rot2, 2) * size2[1]
    c = _closest_on_segment(pos2 - ax, pos2 + ax, pos1)
    n, dist, pos = _sphere_sphere_raw(pos1, size1[0], c, size2[0])
    cnt = int(0)
    if dist < margin:
        pts[0] = pos
        d[0] = dist
        cnt = 1
    return cnt, n, pts, d


@wp.func
def _segments_closest(p1: Any, q1: Any, p2: Any, q2: Any):
    """Closest points of segments p1q1 and p2q2 (Ericson, Real-Time Collision Detection 5.1.9)."""
    zero = type(p1[0])(0.0)
    one = type(p1[0])(1.0)
    d1 = q1 - p1
    d2 = q2 - p2
    r = p1 - p2
    a = wp.dot(d1, d1)
    e = wp.dot(d2, d2)
    f = wp.dot(d2, r)
    s = zero
    t = zero
    if a <= zero and e <= zero:
        s = zero
        t = zero
    elif a <= zero:
        t = wp.clamp(f / e, zero, one)
    else:
        c = wp.dot(d1, r)
        if e <= zero:
            s = wp.clamp(-c / a, zero, one)
        else:
            b = wp.dot(d1, d2)
            den = a * e - b * b
            if den > zero:
                s = wp.clamp((b * f - c * e) / den, zero, one)
            t = (b * s + f) / e
            if t < zero:
                t = zero
                s = wp.clamp(-c / a, zero, one)
            elif t > one:
                t = one
                s = wp.clamp((b - c) / a, zero, one)
    return p1 + d1 * s, p2 + d2 * t


@wp.func
def capsule_capsule(pos1: Any, rot1: Any, size1: Any, pos2: Any, rot2: Any, size2: Any,
                    margin: Any):
    """One contact at the closest points of the axes; two (the ends of the overlap of the axes)
    when the axes are parallel, so that a capsule lying on another is supported along a line."""
    pts, d = _empty(pos1)
    a1 = _col(rot1, 2)
    a2 = _col(rot2, 2)
    h1 = size1[1]
    h2 = size2[1]
    r1 = size1[0]
    r2 = size2[0]
    zero = type(r1)(0.0)
    cr = wp.cross(a1, a2)
    cnt = int(0)
    nout = a1
    parallel = wp.dot(cr, cr) < type(r1)(1e-20)
    if parallel:
        # overlap of the projections of segment 2 onto axis 1
        s0 = wp.dot(pos2 - pos1, a1)
        lo = wp.max(-h1, s0 - h2)
        hi = wp.min(h1, s0 + h2)
        if lo <= hi:
            for k in range(2):
                s = lo
                if k == 1:
                    s = hi
                c1 = pos1 + a1 * s
                c2 = _closest_on_segment(pos2 - a2 * h2, pos2 + a2 * h2, c1)
                n, dist, pos = _sphere_sphere_raw(c1, r1, c2, r2)
                nout = n
                if dist < margin:
                    pts[cnt] = pos
                    d[cnt] = dist
                    cnt += 1
                if hi - lo <= zero:
                    break
        else:
            parallel = False
    if not parallel:
        c1, c2 = _segments_closest(pos1 - a1 * h1, pos1 + a1 * h1, pos2 - a2 * h2, pos2 + a2 * h2)
        n, dist, pos = _sphere_sphere_raw(c1, r1, c2, r2)
        nout = n
        if dist < margin:
            pts[0] = pos
            d[0] = dist
            cnt = 1
    return cnt, nout, pts, d


@wp.func
def sphere_box(pos1: Any, rot1: Any, size1: Any, pos2: Any, rot2: Any, size2: Any, margin: Any):
    """Sphere (geom 1) against box (geom 2): closest box point; inside, the nearest face."""
    pts, d = _empty(pos1)
    r = size1[0]
    zero = type(r)(0.0)
    one = type(r)(1.0)
    half = type(r)(0.5)
    loc = wp.transpose(rot2) * (pos1 - pos2)
    cl = wp.vector(wp.clamp(loc[0], -size2[0], size2[0]), wp.clamp(loc[1], -size2[1], size2[1]),
                   wp.clamp(loc[2], -size2[2], size2[2]))
    diff = loc - cl
    ln = wp.length(diff)
    nl = wp.vector(zero, zero, one)
    dist = zero
    if ln > zero:
        nl = diff / ln                      # box -> sphere, in the box frame
        dist = ln - r
    else:
        # centre inside: push out through the nearest face
        best = size2[0] - wp.abs(loc[0])
        ax = int(0)
        for k in range(1, 3):
            m = size2[k] - wp.abs(loc[k])
            if m < best:
                best = m
                ax = k
        nl = wp.vector(zero, zero, zero)
        if loc[ax] >= zero:
            nl[ax] = one
        else:
            nl[ax] = -one
        dist = -best - r
    # normal from sphere (1) to box (2): opposite of box -> sphere
    n = -(rot2 * nl)
    cnt = int(0)
    if dist < margin:
        pts[0] = pos1 + n * (r + half * dist)
        d[0] = dist
        cnt = 1
    return cnt, n, pts, d


@wp.func
def sphere_cylinder(pos1: Any, rot1: Any, size1: Any, pos2: Any, rot2: Any, size2: Any,
                    margin: Any):
    """Sphere (geom 1) against cylinder (geom 2): closest point of the solid cylinder; inside, the
    nearest of the side and the caps."""
    pts, d = _empty(pos1)
    r = size1[0]
    R = size2[0]
    hl = size2[1]
    zero = type(r)(0.0)
    one = type(r)(1.0)
    half = type(r)(0.5)
    loc = wp.transpose(rot2) * (pos1 - pos2)
    rho = wp.sqrt(loc[0] * loc[0] + loc[1] * loc[1])
    radial = wp.vector(one, zero, zero)
    if rho > zero:
        radial = wp.vector(loc[0] / rho, loc[1] / rho, zero)
    zc = wp.clamp(loc[2], -hl, hl)
    rc = wp.min(rho, R)
    cl = wp.vector(radial[0] * rc, radial[1] * rc, zc)
    diff = loc - cl
    ln = wp.length(diff)
    nl = wp.vector(zero, zero, one)
    dist = zero
    if rho > R or wp.abs(loc[2]) > hl:
        nl = diff / ln
        dist = ln - r
    else:
        side = R - rho
        cap = hl - wp.abs(loc[2])
        if side < cap:
            nl = radial
            dist = -side - r
        else:
            if loc[2] < zero:
                nl = wp.vector(zero, zero, -one)
            dist = -cap - r
    n = -(rot2 * nl)
    cnt = int(0)
    if dist < margin:
        pts[0] = pos1 + n * (r + half * dist)
        d[0] = dist
        cnt = 1
    return cnt, n, pts, d


@wp.func
def _clip(poly: Any, cnt: int, w: Any, off: Any):
    """Sutherland–Hodgman: keep the part of the convex polygon with dot(w, p) <= off."""
    out = poly * (off - off)
    m = int(0)
    for i in range(cnt):
        a = poly[i]
        j = i + 1
        if j == cnt:
            j = 0
        b = poly[j]
        da = wp.dot(w, a) - off
        db = wp.dot(w, b) - off
        zero = da - da
        if da <= zero:
            if m < 8:
                out[m] = a
                m += 1
            if db > zero:
                if m < 8:
                    out[m] = a + (b - a) * (da / (da - db))
                    m += 1
        elif db <= zero:
            if m < 8:
                out[m] = a + (b - a) * (da / (da - db))
                m += 1
    return out, m


@wp.func
def _face_manifold(cref: Any, rref: Any, href: Any, fi: int, nref: Any, cinc: Any, rinc: Any,
                   hinc: Any, margin: Any):
    """Clip the incident box's face most opposed to ``nref`` against reference face ``fi`` (outward
    normal ``nref``) of the reference box. Returns points on the incident face and their signed
    distances from the reference face plane."""
    zero = margin - margin
    one = zero + type(zero)(1.0)
    # incident face: the incident axis most anti-parallel to nref
    best = zero - one
    j = int(0)
    for k in range(3):
        al = wp.abs(wp.dot(_col(rinc, k), nref))
        if al > best:
            best = al
            j = k
    sj = one
    if wp.dot(_col(rinc, j), nref) > zero:
        sj = -one
    u = (j + 1) % 3
    v = (j + 2) % 3
    fc = cinc + _col(rinc, j) * (sj * hinc[j])
    eu = _col(rinc, u) * hinc[u]
    ev = _col(rinc, v) * hinc[v]
    poly = wp.matrix(shape=(8, 3), dtype=type(zero))
    poly[0] = fc + eu + ev
    poly[1] = fc - eu + ev
    poly[2] = fc - eu - ev
    poly[3] = fc + eu - ev
    cnt = int(4)
    # clip against the four side planes of the reference face
    for k in range(3):
        if k != fi:
            ax = _col(rref, k)
            off = wp.dot(ax, cref)
            poly, cnt = _clip(poly, cnt, ax, off + href[k])
            poly, cnt = _clip(poly, cnt, -ax, -off + href[k])
    fref = cref + nref * href[fi]
    pts = poly * zero
    d = wp.vector(length=8, dtype=type(zero))
    m = int(0)
    for i in range(cnt):
        p = poly[i]
        dist = wp.dot(p - fref, nref)
        if dist < margin:
            pts[m] = p - nref * (type(zero)(0.5) * dist)
            d[m] = dist
            m += 1
    return m, pts, d


@wp.func
def box_box(pos1: Any, rot1: Any, size1: Any, pos2: Any, rot2: Any, size2: Any, margin: Any):
    """Separating-axis test over the 15 axes; face axes give the clipped face polygon (up to 8
    points), edge–edge axes one point at the closest points of the two edges."""
    pts, d = _empty(pos1)
    zero = size1[0] - size1[0]
    one = zero + type(zero)(1.0)
    dc = pos2 - pos1
    best = zero - type(zero)(1e30)
    best_axis = int(-1)
    best_n = dc
    # face axes of box 1 (0..2) and box 2 (3..5)
    for k in range(6):
        L = _col(rot1, k % 3)
        if k >= 3:
            L = _col(rot2, k - 3)
        r1 = zero
        r2 = zero
        for i in range(3):
            r1 = r1 + size1[i] * wp.abs(wp.dot(_col(rot1, i), L))
            r2 = r2 + size2[i] * wp.abs(wp.dot(_col(rot2, i), L))
        s = wp.abs(wp.dot(dc, L)) - r1 - r2
        if s > best:
            best = s
            best_axis = k
            best_n = L
            if wp.dot(dc, L) < zero:
                best_n = -L
    best_face = best
    # edge-edge axes; taken only when clearly better than the best face axis (prefers stable face
    # manifolds when they tie, as for parallel faces: an edge axis of two aligned boxes is their
    # face axis). tol: 1e-9 of the sizes plus 64 ulps of the sizes and the centre distance (the
    # round-off of the separations; float32: ~6e-6 m for 0.2 m boxes, where 1e-9 alone let a
    # round-off edge axis win and a resting stack got one contact per pair and toppled)
    eps = type(zero)(2.2e-16)
    if one + type(zero)(1e-10) == one:
        eps = type(zero)(1.2e-7)                    # float32
    ssum = size1[0] + size1[1] + size1[2] + size2[0] + size2[1] + size2[2]
    tol = type(zero)(1e-9) * ssum + type(zero)(64.0) * eps * (ssum + wp.length(dc))
    for i in range(3):
        for j in range(3):
            c = wp.cross(_col(rot1, i), _col(rot2, j))
            lc = wp.length(c)
            if lc > type(zero)(1e-6):
                L = c / lc
                r1 = zero
                r2 = zero
                for k in range(3):
                    r1 = r1 + size1[k] * wp.abs(wp.dot(_col(rot1, k), L))
                    r2 = r2 + size2[k] * wp.abs(wp.dot(_col(rot2, k), L))
                s = wp.abs(wp.dot(dc, L)) - r1 - r2
                if s > best_face + tol and s > best:
                    best = s
                    best_axis = 6 + 3 * i + j
                    best_n = L
                    if wp.dot(dc, L) < zero:
                        best_n = -L
    cnt = int(0)
    if best < margin:
        if best_axis < 3:
            cnt, pts, d = _face_manifold(pos1, rot1, size1, best_axis, best_n, pos2, rot2, size2,
                                         margin)
        elif best_axis < 6:
            cnt, pts2, d2 = _face_manifold(pos2, rot2, size2, best_axis - 3, -best_n, pos1, rot1,
                                           size1, margin)
            pts = pts2
            d = d2
        else:
            i = (best_axis - 6) // 3
            j = (best_axis - 6) % 3
            # the edge of box 1 furthest along n and the edge of box 2 furthest along -n
            e1 = pos1
            e2 = pos2
            for k in range(3):
                if k != i:
                    a = _col(rot1, k)
                    sg = one
                    if wp.dot(a, best_n) < zero:
                        sg = -one
                    e1 = e1 + a * (sg * size1[k])
                if k != j:
                    b = _col(rot2, k)
                    sg = one
                    if wp.dot(b, best_n) > zero:
                        sg = -one
                    e2 = e2 + b * (sg * size2[k])
            a1 = _col(rot1, i) * size1[i]
            a2 = _col(rot2, j) * size2[j]
            c1, c2 = _segments_closest(e1 - a1, e1 + a1, e2 - a2, e2 + a2)
            pts[0] = (c1 + c2) * type(zero)(0.5)
            d[0] = best
            cnt = 1
    return cnt, best_n, pts, d


@wp.func
def _point_box(p: Any, hb: Any):
    """Closest point of the box [-hb, hb] (its own frame) to p."""
    return wp.vector(wp.clamp(p[0], -hb[0], hb[0]), wp.clamp(p[1], -hb[1], hb[1]),
                     wp.clamp(p[2], -hb[2], hb[2]))


@wp.func
def capsule_box(pos1: Any, rot1: Any, size1: Any, pos2: Any, rot2: Any, size2: Any, margin: Any):
    """Capsule (geom 1) against box (geom 2), exact: when the axis segment meets the box, the
    separating-axis minimum over the 3 box faces and the 3 axis × box-edge directions (complete
    for a segment and a box); otherwise the closest points of the segment and the box (the segment
    ends against the box, the segment against the 12 edges). When the contact is on a box face,
    both ends of the axis clipped to that face give a point (a capsule lying on a box is supported
    along a line), as for plane–capsule."""
    pts, d = _empty(pos1)
    zero = size1[0] - size1[0]
    one = zero + type(zero)(1.0)
    half = type(zero)(0.5)
    r = size1[0]
    h = size1[1]
    hb = size2
    Rt = wp.transpose(rot2)
    a = Rt * (pos1 - pos2)
    u = Rt * _col(rot1, 2)
    p0 = a - u * h
    p1 = a + u * h
    # separating axes (box frame), oriented from the box to the capsule
    best = zero - type(zero)(1e30)
    bestL = u
    bestk = int(-1)
    for k in range(6):
        L = wp.vector(zero, zero, zero)
        valid = True
        if k < 3:
            L[k] = one
        else:
            ex = wp.vector(zero, zero, zero)
            ex[k - 3] = one
            c = wp.cross(u, ex)
            lc = wp.length(c)
            if lc > type(zero)(1e-9):
                L = c / lc
            else:
                valid = False
        if valid:
            s = (wp.abs(wp.dot(a, L)) - h * wp.abs(wp.dot(u, L))
                 - (hb[0] * wp.abs(L[0]) + hb[1] * wp.abs(L[1]) + hb[2] * wp.abs(L[2])))
            if s > best:
                best = s
                bestk = k
                bestL = L
                if wp.dot(a, L) < zero:
                    bestL = -L
    cnt = int(0)
    nl = bestL                    # box -> capsule, box frame
    dist = best - r
    q = a                         # point of the axis segment at the contact
    if best - r < margin:
        if best <= zero:
            # the segment meets the box: penetration along the best axis
            if bestk < 3:
                q = p0
                if wp.dot(p1, nl) < wp.dot(p0, nl):
                    q = p1
            else:
                # the box edge along axis (bestk - 3) furthest along nl, against the segment
                j = bestk - 3
                ec = wp.vector(zero, zero, zero)
                for i in range(3):
                    if i != j:
                        sg = one
                        if nl[i] < zero:
                            sg = -one
                        ec[i] = sg * hb[i]
                ed = wp.vector(zero, zero, zero)
                ed[j] = hb[j]
                qs, qe = _segments_closest(p0, p1, ec - ed, ec + ed)
                q = qs
        else:
            # separated segment: closest points (ends against the box, segment against edges)
            c0 = _point_box(p0, hb)
            dmin = wp.length(p0 - c0)
            q = p0
            cb = c0
            c1 = _point_box(p1, hb)
            if wp.length(p1 - c1) < dmin:
                dmin = wp.length(p1 - c1)
                q = p1
                cb = c1
            for ei in range(12):
                j = ei // 4
                sa = one
                sb = one
                if (ei & 1) != 0:
                    sa = -one
                if (ei & 2) != 0:
                    sb = -one
                ec = wp.vector(zero, zero, zero)
                ec[(j + 1) % 3] = sa * hb[(j + 1) % 3]
                ec[(j + 2) % 3] = sb * hb[(j + 2) % 3]
                ed = wp.vector(zero, zero, zero)
                ed[j] = hb[j]
                qs, qe = _segments_closest(p0, p1, ec - ed, ec + ed)
                if wp.length(qs - qe) < dmin:
                    dmin = wp.length(qs - qe)
                    q = qs
                    cb = qe
            nl = (q - cb) / dmin
            dist = dmin - r
        if dist < margin:
            # a face contact: both ends of the segment clipped to the face
            fk = int(-1)
            for k in range(3):
                if wp.abs(nl[k]) > one - type(zero)(1e-9):
                    fk = k
            two = False
            if fk >= 0:
                sg = one
                if nl[fk] < zero:
                    sg = -one
                t0 = zero - h
                t1 = h
                for k in range(3):
                    if k != fk:
                        if wp.abs(u[k]) > zero:
                            ta = (-hb[k] - a[k]) / u[k]
                            tb = (hb[k] - a[k]) / u[k]
                            t0 = wp.max(t0, wp.min(ta, tb))
                            t1 = wp.min(t1, wp.max(ta, tb))
                        elif wp.abs(a[k]) > hb[k]:
                            t1 = t0 - one
                if t1 > t0:
                    qa = a + u * t0
                    qb = a + u * t1
                    da = sg * qa[fk] - hb[fk] - r
                    db = sg * qb[fk] - hb[fk] - r
                    tol = type(zero)(1e-9) * (h + r + hb[0] + hb[1] + hb[2])
                    if wp.abs(wp.min(da, db) - dist) <= tol:
                        two = True
                        fn = wp.vector(zero, zero, zero)
                        fn[fk] = sg
                        if da < margin:
                            pts[cnt] = pos2 + rot2 * (qa - fn * (r + half * da))
                            d[cnt] = da
                            cnt += 1
                        if db < margin:
                            pts[cnt] = pos2 + rot2 * (qb - fn * (r + half * db))
                            d[cnt] = db
                            cnt += 1
            if not two:
                pts[0] = pos2 + rot2 * (q - nl * (r + half * dist))
                d[0] = dist
                cnt = 1
    # normal from the capsule (1) to the box (2)
    return cnt, -(rot2 * nl), pts, d
