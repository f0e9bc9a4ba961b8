"""General convex pairs: GJK (distance of separated shapes) and EPA (penetration of overlapping
ones) on support functions of the primitives (Warp functions, generic over precision).

Support functions: sphere, capsule, cylinder, box, ellipsoid (MuJoCo half sizes, geom frame).
Conventions as in collision_primitive.py: normal from geom 1 to geom 2, signed distance, one
contact point midway between the witness points.

Tolerances: GJK stops when the distance bound gap falls under GJK_TOL × (size of the pair); EPA
stops when the support along the closest face's normal exceeds that face's distance by less than
EPA_TOL × size, or when its polytope (EPA_VERTS vertices) is full. On polytopes (boxes) EPA is
exact at termination; on curved shapes the polytope capacity bounds the accuracy (see
docs/collision.md for the measured errors).
"""

from typing import Any

import warp as wp

from .collision_primitive import _any_perp, _col, _empty

GJK_ITERS = 64
EPA_VERTS = 96
EPA_FACES = 192
REFINE_ITERS = 160
REFINE_STARTS = 8


@wp.func
def support(t: int, size: Any, pos: Any, R: Any, d: Any, mv: Any):
    """World support point of a primitive (type codes of polyphys.geometry) in direction d; a
    convex mesh (6) carries (first vertex, vertex count) of its hull in mv as its size."""
    zero = size[0] - size[0]
    one = zero + type(zero)(1.0)
    dl = wp.transpose(R) * d
    loc = wp.vector(zero, zero, zero)
    ln = wp.length(dl)
    u = wp.vector(one, zero, zero)
    if ln > zero:
        u = dl / ln
    if t == 1:                                   # sphere
        loc = u * size[0]
    elif t == 2:                                 # capsule
        loc = u * size[0]
        if dl[2] >= zero:
            loc[2] = loc[2] + size[1]
        else:
            loc[2] = loc[2] - size[1]
    elif t == 3:                                 # cylinder
        rho = wp.sqrt(dl[0] * dl[0] + dl[1] * dl[1])
        if rho > zero:
            loc[0] = dl[0] / rho * size[0]
            loc[1] = dl[1] / rho * size[0]
        if dl[2] >= zero:
            loc[2] = size[1]
        else:
            loc[2] = -size[1]
    elif t == 4:                                 # box
        for i in range(3):
            if dl[i] >= zero:
                loc[i] = size[i]
            else:
                loc[i] = -size[i]
    elif t == 6:                                 # convex mesh: hull vertices mv[adr:adr+num]
        adr = int(size[0])
        num = int(size[1])
        best = zero - type(zero)(1e30)
        for i in range(num):
            v = mv[adr + i]
            pr = wp.dot(v, dl)
            if pr > best:
                best = pr
                loc = v
    elif t == 5:                                 # ellipsoid
        sd = wp.vector(size[0] * dl[0], size[1] * dl[1], size[2] * dl[2])
        ls = wp.length(sd)
        if ls > zero:
            loc = wp.vector(size[0] * sd[0], size[1] * sd[1], size[2] * sd[2]) / ls
        else:
            loc = wp.vector(size[0], zero, zero)
    return pos + R * loc


@wp.func
def _tri_bary(a: Any, b: Any, c: Any):
    """Barycentric weights of the point of triangle abc closest to the origin (Ericson 5.1.5)."""
    zero = a[0] - a[0]
    one = zero + type(zero)(1.0)
    ab = b - a
    ac = c - a
    ap = -a
    d1 = wp.dot(ab, ap)
    d2 = wp.dot(ac, ap)
    w = wp.vector(one, zero, zero)
    if d1 <= zero and d2 <= zero:
        return w
    bp = -b
    d3 = wp.dot(ab, bp)
    d4 = wp.dot(ac, bp)
    if d3 >= zero and d4 <= d3:
        return wp.vector(zero, one, zero)
    vc = d1 * d4 - d3 * d2
    if vc <= zero and d1 >= zero and d3 <= zero:
        v = d1 / (d1 - d3)
        return wp.vector(one - v, v, zero)
    cp = -c
    d5 = wp.dot(ab, cp)
    d6 = wp.dot(ac, cp)
    if d6 >= zero and d5 <= d6:
        return wp.vector(zero, zero, one)
    vb = d5 * d2 - d1 * d6
    if vb <= zero and d2 >= zero and d6 <= zero:
        v = d2 / (d2 - d6)
        return wp.vector(one - v, zero, v)
    va = d3 * d6 - d5 * d4
    if va <= zero and (d4 - d3) >= zero and (d5 - d6) >= zero:
        v = (d4 - d3) / ((d4 - d3) + (d5 - d6))
        return wp.vector(zero, one - v, v)
    den = one / (va + vb + vc)
    v = vb * den
    ww = vc * den
    return wp.vector(one - v - ww, v, ww)


@wp.func
def _seg_bary(a: Any, b: Any):
    zero = a[0] - a[0]
    one = zero + type(zero)(1.0)
    ab = b - a
    den = wp.dot(ab, ab)
    t = zero
    if den > zero:
        t = wp.clamp(-wp.dot(a, ab) / den, zero, one)
    return wp.vector(one - t, t, zero)


@wp.func
def _closest_simplex(W: Any, PA: Any, n: int):
    """Closest point to the origin of the simplex W[0:n] (n <= 4); reduces the simplex to the
    vertices carrying it. Returns (v, W, PA, n, inside) — inside: the origin is in the tetrahedron."""
    zero = W[0, 0] - W[0, 0]
    v = W[0]
    inside = bool(False)
    lam = wp.vector(zero, zero, zero, zero)
    if n == 1:
        lam[0] = zero + type(zero)(1.0)
    elif n == 2:
        b = _seg_bary(W[0], W[1])
        lam = wp.vector(b[0], b[1], zero, zero)
    elif n == 3:
        b = _tri_bary(W[0], W[1], W[2])
        lam = wp.vector(b[0], b[1], b[2], zero)
    else:
        # tetrahedron: faces opposite each vertex; origin outside a face if it is on the other
        # side from the opposite vertex
        best = zero + type(zero)(1e30)
        anyout = bool(False)
        for f in range(4):
            i0 = (f + 1) % 4
            i1 = (f + 2) % 4
            i2 = (f + 3) % 4
            a = W[i0]
            b = W[i1]
            c = W[i2]
            nrm = wp.cross(b - a, c - a)
            so = wp.dot(-a, nrm)
            sv = wp.dot(W[f] - a, nrm)
            if so * sv < zero:
                anyout = True
                bb = _tri_bary(a, b, c)
                p = a * bb[0] + b * bb[1] + c * bb[2]
                dd = wp.dot(p, p)
                if dd < best:
                    best = dd
                    lam = wp.vector(zero, zero, zero, zero)
                    lam[i0] = bb[0]
                    lam[i1] = bb[1]
                    lam[i2] = bb[2]
        if not anyout:
            inside = True
            q4 = type(zero)(0.25)
            lam = wp.vector(q4, q4, q4, q4)
    v = W[0] * lam[0]
    for i in range(1, 4):
        if i < n:
            v = v + W[i] * lam[i]
    # keep the vertices with a positive weight
    W2 = W * zero
    P2 = PA * zero
    m = int(0)
    for i in range(4):
        if i < n and (lam[i] > zero or inside):
            W2[m] = W[i]
            P2[m] = PA[i]
            m += 1
    return v, W2, P2, m, inside, lam


@wp.func
def _witness(PA: Any, W: Any, n: int, v: Any):
    """The point of A whose Minkowski image is v (barycentric on the reduced simplex)."""
    a = PA[0]
    if n == 2:
        b = _seg_bary(W[0], W[1])
        a = PA[0] * b[0] + PA[1] * b[1]
    elif n == 3:
        b = _tri_bary(W[0], W[1], W[2])
        a = PA[0] * b[0] + PA[1] * b[1] + PA[2] * b[2]
    return a


@wp.func
def _hD(t1: int, pos1: Any, rot1: Any, size1: Any, t2: int, pos2: Any, rot2: Any, size2: Any,
        n: Any, mv: Any):
    return wp.dot(n, support(t1, size1, pos1, rot1, n, mv) - support(t2, size2, pos2, rot2, -n, mv))


@wp.func
def _refine(t1: int, pos1: Any, rot1: Any, size1: Any, t2: int, pos2: Any, rot2: Any, size2: Any,
            n0: Any, gtol: Any, mv: Any):
    """Local minimum of h_D on the unit sphere from n0: at each step angle, the descent direction
    (minus the projected support point) and 8 pattern directions of the tangent plane are tried;
    the first that lowers h_D is taken and the angle doubled, else the angle is halved (pattern
    search also gets past the kinks of h_D at edges and rims)."""
    zero = gtol - gtol
    nr = n0
    hv = _hD(t1, pos1, rot1, size1, t2, pos2, rot2, size2, nr, mv)
    th = zero + type(gtol)(0.05)
    c45 = zero + type(gtol)(0.7071067811865476)
    for _it in range(REFINE_ITERS):
        if th < type(gtol)(1e-12):
            break
        w = support(t1, size1, pos1, rot1, nr, mv) - support(t2, size2, pos2, rot2, -nr, mv)
        g = w - nr * wp.dot(w, nr)
        gl = wp.length(g)
        ta = _any_perp(nr)
        tb = wp.cross(nr, ta)
        acc = bool(False)
        for k in range(9):
            if not acc:
                dirv = ta
                if k == 0:
                    dirv = ta * zero
                    if gl > zero:
                        dirv = -g / gl
                elif k == 2:
                    dirv = -ta
                elif k == 3:
                    dirv = tb
                elif k == 4:
                    dirv = -tb
                elif k == 5:
                    dirv = (ta + tb) * c45
                elif k == 6:
                    dirv = (ta - tb) * c45
                elif k == 7:
                    dirv = (tb - ta) * c45
                elif k == 8:
                    dirv = -(ta + tb) * c45
                if wp.length(dirv) > zero:
                    mm = wp.normalize(nr + dirv * th)
                    hm = _hD(t1, pos1, rot1, size1, t2, pos2, rot2, size2, mm, mv)
                    if hm < hv:
                        nr = mm
                        hv = hm
                        acc = True
        if acc:
            th = th * type(gtol)(2.0)
        else:
            th = th * type(gtol)(0.5)
    return hv, nr


@wp.func
def _scale(t: int, size: Any, mv: Any):
    """Size of a shape for the tolerances: |half sizes|, or a convex mesh's largest vertex
    distance from its origin (its "size" holds its vertex range, not a length)."""
    out = wp.length(size)
    if t == 6:
        out = size[0] - size[0]
        adr = int(size[0])
        for i in range(int(size[1])):
            out = wp.max(out, wp.length(mv[adr + i]))
    return out


@wp.func
def convex_pair(t1: int, pos1: Any, rot1: Any, size1: Any, t2: int, pos2: Any, rot2: Any,
                size2: Any, margin: Any, mv: Any):
    """GJK, then EPA when the shapes overlap: one contact (normal 1→2, signed distance)."""
    pts, dres = _empty(pos1)
    zero = margin - margin
    one = zero + type(zero)(1.0)
    half = type(zero)(0.5)
    scale = _scale(t1, size1, mv) + _scale(t2, size2, mv)
    gtol = type(zero)(1e-10) * scale
    W = wp.matrix(shape=(4, 3), dtype=type(zero))
    PA = wp.matrix(shape=(4, 3), dtype=type(zero))
    n = int(0)
    v = pos1 - pos2
    if wp.length(v) <= zero:
        v = wp.vector(one, zero, zero)
    inside = bool(False)
    touching = bool(False)
    for _it in range(GJK_ITERS):
        a = support(t1, size1, pos1, rot1, -v, mv)
        b = support(t2, size2, pos2, rot2, v, mv)
        w = a - b
        vv = wp.dot(v, v)
        if n > 0 and vv - wp.dot(v, w) <= gtol * wp.sqrt(vv):
            break
        W[n] = w
        PA[n] = a
        n += 1
        v, W, PA, n, inside, lam = _closest_simplex(W, PA, n)
        if inside:
            break
        if wp.length(v) <= gtol:
            touching = True
            break
    cnt = int(0)
    nrm = v
    dist = zero
    pa = pos1
    pb = pos2
    if not inside and not touching:
        dist = wp.length(v)
        # v = a - b points from B to A: the normal from 1 to 2 is -v/|v|
        nrm = -v / dist
        pa = _witness(PA, W, n, v)
        pb = pa - v
    else:
        # EPA: grow a tetrahedron around the origin
        V = wp.matrix(shape=(EPA_VERTS, 3), dtype=type(zero))
        VA = wp.matrix(shape=(EPA_VERTS, 3), dtype=type(zero))
        for i in range(4):
            if i < n:
                V[i] = W[i]
                VA[i] = PA[i]
        nv = n
        # complete a degenerate simplex with supports along the axes and their opposites
        k = int(0)
        while nv < 4 and k < 6:
            d = wp.vector(zero, zero, zero)
            if k % 2 == 0:
                d[k // 2] = one
            else:
                d[k // 2] = -one
            a = support(t1, size1, pos1, rot1, d, mv)
            w = a - support(t2, size2, pos2, rot2, -d, mv)
            ok = bool(True)
            if nv == 1:
                ok = wp.length(w - V[0]) > gtol
            elif nv == 2:
                ok = wp.length(wp.cross(V[1] - V[0], w - V[0])) > gtol * scale
            elif nv == 3:
                ok = wp.abs(wp.dot(wp.cross(V[1] - V[0], V[2] - V[0]), w - V[0])) > gtol * scale * scale
            if ok:
                V[nv] = w
                VA[nv] = a
                nv += 1
            k += 1
        F = wp.matrix(shape=(EPA_FACES, 3), dtype=wp.int32)
        alive = wp.vector(length=EPA_FACES, dtype=wp.int32)
        nf = int(0)
        # orient the 4 faces outwards (away from the opposite vertex)
        for f in range(4):
            i0 = (f + 1) % 4
            i1 = (f + 2) % 4
            i2 = (f + 3) % 4
            nn = wp.cross(V[i1] - V[i0], V[i2] - V[i0])
            if wp.dot(nn, V[f] - V[i0]) > zero:
                F[nf] = wp.vec3i(i0, i2, i1)
            else:
                F[nf] = wp.vec3i(i0, i1, i2)
            alive[nf] = 1
            nf += 1
        best_d = zero
        best_n = v
        best_f = int(0)
        converged = bool(False)
        for _it in range(EPA_VERTS):
            # closest alive face
            best_d = zero + type(zero)(1e30)
            for f in range(nf):
                if alive[f] != 0:
                    a0 = V[F[f, 0]]
                    nn = wp.cross(V[F[f, 1]] - a0, V[F[f, 2]] - a0)
                    ln = wp.length(nn)
                    if ln > zero:
                        dd = wp.dot(nn, a0) / ln
                        if dd < best_d:
                            best_d = dd
                            best_n = nn / ln
                            best_f = f
            if nv >= EPA_VERTS:
                break
            a = support(t1, size1, pos1, rot1, best_n, mv)
            w = a - support(t2, size2, pos2, rot2, -best_n, mv)
            if wp.dot(w, best_n) - best_d <= gtol:
                converged = True
                break
            # remove the faces seeing w; the horizon edges (used once) get new faces
            E = wp.matrix(shape=(EPA_FACES, 2), dtype=wp.int32)
            ne = int(0)
            for f in range(nf):
                if alive[f] != 0:
                    a0 = V[F[f, 0]]
                    nn = wp.cross(V[F[f, 1]] - a0, V[F[f, 2]] - a0)
                    if wp.dot(nn, w - a0) > zero:
                        alive[f] = 0
                        for e in range(3):
                            ea = F[f, e]
                            eb = F[f, (e + 1) % 3]
                            # an edge seen twice (both orientations) is interior: drop it
                            found = int(-1)
                            for q in range(ne):
                                if E[q, 0] == eb and E[q, 1] == ea:
                                    found = q
                            if found >= 0:
                                ne -= 1
                                E[found, 0] = E[ne, 0]
                                E[found, 1] = E[ne, 1]
                            elif ne < EPA_FACES:
                                E[ne, 0] = ea
                                E[ne, 1] = eb
                                ne += 1
            if ne == 0 or nf + ne > EPA_FACES:
                break
            V[nv] = w
            VA[nv] = a
            for q in range(ne):
                F[nf] = wp.vec3i(E[q, 0], E[q, 1], nv)
                alive[nf] = 1
                nf += 1
            nv += 1
        # refine: the depth is min over unit n of h_D(n) = n·s_D(n) (EPA's face distance is a
        # lower bound, h_D an upper one; h_D has local minima on the sphere): descent from the
        # normals of the REFINE_STARTS closest EPA faces, the lowest minimum wins
        hv = zero + type(zero)(1e30)
        nr = best_n
        # two polytopes (box, convex mesh) and EPA converged (not stopped by its capacity): the
        # closest face is exact to gtol, the refinement is skipped (the cost of box or mesh
        # bodies on heightfield prisms)
        poly = (t1 == 4 or t1 == 6) and (t2 == 4 or t2 == 6) and converged
        if poly:
            hv = best_d
        else:
            prev = zero - type(zero)(1e30)
            for _st in range(REFINE_STARTS):
                # the next closest alive face after distance prev
                cd = zero + type(zero)(1e30)
                cn = best_n
                for f in range(nf):
                    if alive[f] != 0:
                        a0 = V[F[f, 0]]
                        nn = wp.cross(V[F[f, 1]] - a0, V[F[f, 2]] - a0)
                        ln = wp.length(nn)
                        if ln > zero:
                            dd = wp.dot(nn, a0) / ln
                            if dd > prev and dd < cd:
                                cd = dd
                                cn = nn / ln
                if cd < type(zero)(1e29):
                    prev = cd
                    h1, n1 = _refine(t1, pos1, rot1, size1, t2, pos2, rot2, size2, cn, gtol, mv)
                    if h1 < hv:
                        hv = h1
                        nr = n1
            # and from the centre line and the ± axes of both shapes (the cap/side basins of capsules
            # and cylinders, the principal basins of boxes and ellipsoids)
            for st in range(13):
                d0 = pos2 - pos1
                if st >= 1 and st < 7:
                    d0 = _col(rot1, (st - 1) // 2)
                elif st >= 7:
                    d0 = _col(rot2, (st - 7) // 2)
                if st >= 1 and (st % 2) == 0:
                    d0 = -d0
                if wp.length(d0) > zero:
                    h1, n1 = _refine(t1, pos1, rot1, size1, t2, pos2, rot2, size2, wp.normalize(d0),
                                     gtol, mv)
                    if h1 < hv:
                        hv = h1
                        nr = n1
        if hv < best_d:
            hv = best_d
        # penetration: distance -depth along n (normal 1→2: B moves along +n)
        dist = -hv
        nrm = nr
        i0 = F[best_f, 0]
        i1 = F[best_f, 1]
        i2 = F[best_f, 2]
        pproj = best_n * best_d
        bb = _tri_bary(V[i0] - pproj, V[i1] - pproj, V[i2] - pproj)
        pa = VA[i0] * bb[0] + VA[i1] * bb[1] + VA[i2] * bb[2]
        pb = pa - pproj
    if dist < margin:
        pts[0] = (pa + pb) * half
        dres[0] = dist
        cnt = 1
    return cnt, nrm, pts, dres


@wp.func
def plane_mesh(pos1: Any, rot1: Any, size1: Any, pos2: Any, rot2: Any, size2: Any, margin: Any,
               mv: Any):
    """Convex mesh (geom 2) on a plane (geom 1): the 8 deepest hull vertices within the margin
    (pruning keeps 4)."""
    pts, d = _empty(pos1)
    n = _col(rot1, 2)
    adr = int(size2[0])
    num = int(size2[1])
    cnt = int(0)
    half = margin - margin + type(margin)(0.5)
    for i in range(num):
        c = pos2 + rot2 * mv[adr + i]
        dist = wp.dot(c - pos1, n)
        if dist < margin:
            # insert into the list sorted by depth, keeping the 8 deepest
            j = cnt
            if cnt < 8:
                cnt += 1
            else:
                j = 7
                if dist >= d[7]:
                    j = -1
            if j >= 0:
                while j > 0 and d[j - 1] > dist:
                    d[j] = d[j - 1]
                    pts[j] = pts[j - 1]
                    j -= 1
                d[j] = dist
                pts[j] = c - n * (half * dist)
    return cnt, n, pts, d
