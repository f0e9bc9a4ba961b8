"""Heightfield contacts: internal-edge normal correction and face manifolds (Warp functions,
generic over precision), applied by collision_gjk.narrowphase_convex to the GJK/EPA contact of
a geom with one heightfield prism.

A heightfield is collided as one convex prism per grid triangle (MuJoCo's decomposition). A
prism's minimum translation at an edge or vertex it shares with a neighbour is not a normal of
the terrain surface: on a flat terrain a sphere near a cell diagonal gets a tilted normal from
the neighbour prism and is pushed sideways. Correction (Bullet's internal-edge idea, on the
heightfield's own adjacency):

1. the contact normal n (out of the terrain, heightfield frame) is kept as the face contact when
   it is the prism's top normal nT (within FACE_TOL);
2. otherwise the prism's witness point names the feature of the top triangle it lies on (the
   nearest edge in the x-y plane, or one of its vertices when within VERT_TOL of the edge's
   length from it) and n is moved to the nearest normal (angle) of that feature's cone: for an
   edge the arc between nT and the normal the edge may add (convex edge: the neighbour's normal;
   border: the outward wall; flat or concave edge: nT only), for a vertex the convex cone of the
   normals of every triangle and wall meeting there (collision.py _hfield_cones); a corrected
   normal equal to nT (tol2) is the face's;
3. when the corrected normal is nT, a sphere, capsule, cylinder or box gets the face manifold of this
   prism: its lowest feature along -nT (sphere point, capsule segment, box face most opposed to
   nT) clipped to the triangle's vertical column, each point with its distance to the triangle's
   plane. The columns partition the terrain, so every contact point is produced by exactly the
   prism under it (the neighbour's clipped set is empty). A clipped vertex on a flat or concave
   edge of the triangle is dropped (the body's face or segment continues into the neighbour's
   column there: an artefact of the partition), so on a flat terrain the manifold is the plane's
   (box corners, capsule ends). Other shapes, and a face contact whose
   clipped set is empty, keep the single GJK/EPA point with the corrected normal (a sphere's
   point moved onto the line through its centre along the normal, so that it exerts no torque).
   An empty face manifold drops the contact when the feature admits no other normal (a flat or
   concave neighbourhood: the prism under the point produces it), and keeps the single point at a
   convex edge, vertex or border (the columns of two faces of a ridge can both miss its top).
   The depth of a corrected single point stays the minimum translation (Bullet's choice): never
   more than the penetration along the corrected normal.

Contacts of a prism's bottom (normal pointing down) are left as they are; those through a side
wall (horizontal normal: a body more than its own radius deep) are corrected like the others.
"""

from typing import Any

import warp as wp

from .collision_primitive import _any_perp, _col

SPHERE = wp.constant(1)
CAPSULE = wp.constant(2)
CYLINDER = wp.constant(3)
BOX = wp.constant(4)

FACE_TOL = 1.0e-6          # 1 - cos(angle) under which a normal is the face's (1.4 mrad)
VERT_TOL = 1.0e-3          # fraction of an edge's length within which a witness is at its vertex


@wp.func
def _arc(s0: Any, s1: Any, n: Any):
    """The unit vector of the great-circle arc s0-s1 (shorter arc) nearest to n in angle."""
    zero = n[0] - n[0]
    m = wp.cross(s0, s1)
    mm = wp.dot(m, m)
    out = s0
    if wp.dot(n, s1) > wp.dot(n, s0):
        out = s1
    if mm > type(zero)(1.0e-24):
        p = n - m * (wp.dot(n, m) / mm)
        lp = wp.length(p)
        if lp > type(zero)(1.0e-12):
            ph = p / lp
            if wp.dot(wp.cross(s0, ph), m) >= zero and wp.dot(wp.cross(ph, s1), m) >= zero:
                out = ph
    return out


@wp.func
def _cone_clamp(cone_nrm: Any, ci: int, k: int, n: Any):
    """n moved into the convex cone of cone_nrm[ci, 0:k] (corners counter-clockwise seen from
    outside): n itself when inside, else the nearest point (angle) of its boundary."""
    zero = n[0] - n[0]
    out = cone_nrm[ci, 0]
    if k == 2:
        out = _arc(cone_nrm[ci, 0], cone_nrm[ci, 1], n)
    elif k >= 3:
        inside = bool(True)
        for i in range(k):
            s0 = cone_nrm[ci, i]
            s1 = cone_nrm[ci, (i + 1) % k]
            if wp.dot(wp.cross(s0, s1), n) < zero:
                inside = False
        if inside:
            out = n
        else:
            best = zero - type(zero)(2.0)
            for i in range(k):
                c = _arc(cone_nrm[ci, i], cone_nrm[ci, (i + 1) % k], n)
                if wp.dot(c, n) > best:
                    best = wp.dot(c, n)
                    out = c
    return out


@wp.func
def _side(a: Any, b: Any, p: Any):
    """> 0 when p (x-y) is left of the directed edge a→b: inside a counter-clockwise triangle."""
    return (b[0] - a[0]) * (p[1] - a[1]) - (b[1] - a[1]) * (p[0] - a[0])


@wp.func
def _face_manifold(to: int, q: Any, Rl: Any, so: Any, a: Any, b: Any, c: Any, nT: Any,
                   margin: Any, flat: int):
    """Face contact points (heightfield frame) of a sphere, capsule, cylinder or box (centre q,
    rotation Rl, half sizes so) with the prism under triangle abc (counter-clockwise, normal nT):
    its lowest feature along -nT clipped to the triangle's column; (count, points midway,
    distances).
    Every clipped vertex remembers the triangle edges it lies on (bit e: edge e, from vertex e to
    e+1); one on an edge in ``flat`` (bit e: the neighbour across edge e is coplanar, or the edge
    is concave) is dropped — there the body's feature continues into the neighbour's column, so
    the vertex is an artefact of the partition, not a corner of the contact region (on a flat
    terrain the manifold is then the plane's: box corners, capsule ends)."""
    zero = margin - margin
    half = type(zero)(0.5)
    poly = wp.matrix(shape=(8, 3), dtype=type(zero))
    mask = wp.vector(length=8, dtype=wp.int32)
    pts = wp.matrix(shape=(8, 3), dtype=type(zero))
    dd = wp.vector(length=8, dtype=type(zero))
    np_ = int(0)
    if to == SPHERE:
        poly[0] = q - nT * so[0]
        np_ = 1
    elif to == CAPSULE:
        ax = _col(Rl, 2) * so[1]
        poly[0] = q + ax - nT * so[0]
        poly[1] = q - ax - nT * so[0]
        np_ = 2
    elif to == CYLINDER:
        # standing (axis within 45° of nT): the near cap's rim at the deepest radial direction,
        # ±90° and opposite (plane_cylinder's points); lying: the generator nearest the face
        ax = _col(Rl, 2)
        if wp.dot(ax, nT) > zero:
            ax = -ax
        rad = -nT - ax * wp.dot(-nT, ax)
        lr = wp.length(rad)
        if lr > type(zero)(1.0e-12):
            rad = rad / lr
        else:
            rad = _any_perp(ax)
        side = wp.cross(ax, rad)
        near = q + ax * so[1]
        if -wp.dot(ax, nT) >= type(zero)(0.7071067811865476):
            poly[0] = near + rad * so[0]
            poly[1] = near + side * so[0]
            poly[2] = near - rad * so[0]
            poly[3] = near - side * so[0]
            np_ = 4
        else:
            poly[0] = near + rad * so[0]
            poly[1] = q - ax * so[1] + rad * so[0]
            np_ = 2
    elif to == BOX:
        i = int(0)
        best = zero - type(zero)(1.0)
        for k in range(3):
            v = wp.abs(wp.dot(_col(Rl, k), nT))
            if v > best:
                best = v
                i = k
        ci = _col(Rl, i)
        sg = type(zero)(1.0)
        if wp.dot(ci, nT) > zero:
            sg = type(zero)(-1.0)
        ctr = q + ci * (so[i] * sg)
        j = (i + 1) % 3
        k2 = (i + 2) % 3
        u = _col(Rl, j) * so[j]
        w = _col(Rl, k2) * so[k2]
        poly[0] = ctr + u + w
        poly[1] = ctr - u + w
        poly[2] = ctr - u - w
        poly[3] = ctr + u - w
        np_ = 4
    for e in range(3):
        va = a
        vb = b
        if e == 1:
            va = b
            vb = c
        elif e == 2:
            va = c
            vb = a
        out = wp.matrix(shape=(8, 3), dtype=type(zero))
        om = wp.vector(length=8, dtype=wp.int32)
        bit = 1 << e
        no = int(0)
        if np_ == 1:
            if _side(va, vb, poly[0]) >= zero:
                out[0] = poly[0]
                om[0] = mask[0]
                no = 1
        elif np_ == 2:
            s0 = _side(va, vb, poly[0])
            s1 = _side(va, vb, poly[1])
            if s0 >= zero or s1 >= zero:
                p0 = poly[0]
                p1 = poly[1]
                m0 = mask[0]
                m1 = mask[1]
                if s0 < zero:
                    p0 = poly[0] + (poly[1] - poly[0]) * (s0 / (s0 - s1))
                    m0 = (mask[0] & mask[1]) | bit
                if s1 < zero:
                    p1 = poly[1] + (poly[0] - poly[1]) * (s1 / (s1 - s0))
                    m1 = (mask[0] & mask[1]) | bit
                out[0] = p0
                out[1] = p1
                om[0] = m0
                om[1] = m1
                no = 2
        else:
            for i in range(np_):
                ip = (i + np_ - 1) % np_
                cur = poly[i]
                prv = poly[ip]
                sc = _side(va, vb, cur)
                sp = _side(va, vb, prv)
                mi = (mask[i] & mask[ip]) | bit
                if sc >= zero:
                    if sp < zero and no < 8:
                        out[no] = prv + (cur - prv) * (sp / (sp - sc))
                        om[no] = mi
                        no += 1
                    if no < 8:
                        out[no] = cur
                        om[no] = mask[i]
                        no += 1
                elif sp >= zero and no < 8:
                    out[no] = prv + (cur - prv) * (sp / (sp - sc))
                    om[no] = mi
                    no += 1
        poly = out
        mask = om
        np_ = no
    cnt = int(0)
    for i in range(np_):
        dist = wp.dot(poly[i] - a, nT)
        if dist < margin and (mask[i] & flat) == 0:
            pts[cnt] = poly[i] - nT * (half * dist)
            dd[cnt] = dist
            cnt += 1
    return cnt, pts, dd


@wp.func
def prism_contact(pr: int, pos_p: Any, R_p: Any, size_p: Any, to: int, pos_o: Any, R_o: Any,
                  size_o: Any, prism_first: bool, cnt: int, nrm: Any, pts: Any, d: Any,
                  margin: Any, mv: Any, prism_nrm: Any, prism_vcone: Any, cone_nrm: Any,
                  cone_cnt: Any):
    """Correct the GJK/EPA contact (cnt, nrm from geom 1 to geom 2, pts, d) of heightfield prism
    ``pr`` (pose pos_p, R_p; mesh size: its vertex range in mv) with another geom (type to) —
    see the module docstring. prism_first: the prism is geom 1."""
    zero = margin - margin
    one = zero + type(zero)(1.0)
    half = type(zero)(0.5)
    # "the same normal" after the clamp: 1e-10 in float64 (1.4e-5 rad), 2.4e-7 in float32
    tol2 = type(zero)(1.0e-10)
    if one - tol2 == one:
        tol2 = type(zero)(2.4e-7)
    n_out = -nrm                        # out of the terrain, towards the other geom
    if prism_first:
        n_out = nrm
    nl = wp.transpose(R_p) * n_out
    ocnt = cnt
    onrm = nrm
    opts = pts
    od = d
    # a side wall's normal is horizontal (nl[2] = 0 up to round-off): corrected as well; only a
    # normal with a clearly downward component (the prism's bottom) is left alone
    if cnt > 0 and nl[2] > -type(zero)(FACE_TOL):
        adr = int(size_p[0])
        a = mv[adr]
        b = mv[adr + 1]
        c = mv[adr + 2]
        nT = prism_nrm[pr, 0]
        # the boundary feature of the top triangle nearest to the prism's witness point (x-y)
        w = wp.transpose(R_p) * (pts[0] - n_out * (half * d[0]) - pos_p)
        best = zero + type(zero)(1.0e30)
        fe = int(0)
        ft = zero
        for k in range(3):
            va = a
            vb = b
            if k == 1:
                va = b
                vb = c
            elif k == 2:
                va = c
                vb = a
            ex = vb[0] - va[0]
            ey = vb[1] - va[1]
            t = wp.clamp(((w[0] - va[0]) * ex + (w[1] - va[1]) * ey) / (ex * ex + ey * ey),
                         zero, one)
            dx = va[0] + t * ex - w[0]
            dy = va[1] + t * ey - w[1]
            dist2 = dx * dx + dy * dy
            if dist2 < best:
                best = dist2
                fe = k
                ft = t
        vc = prism_vcone[pr]
        vtx = int(-1)
        if ft < type(zero)(VERT_TOL):
            vtx = vc[fe]
        elif ft > one - type(zero)(VERT_TOL):
            vtx = vc[(fe + 1) % 3]
        # does the feature admit any normal but the face's? (no: flat or concave surroundings)
        wide = bool(False)
        if vtx >= 0:
            wide = cone_cnt[vtx] >= 2
        else:
            wide = one - wp.dot(nT, prism_nrm[pr, fe + 1]) > tol2
        nc = nT
        face = bool(True)
        if wp.dot(nl, nT) < one - type(zero)(FACE_TOL):
            if vtx >= 0:
                nc = _cone_clamp(cone_nrm, vtx, cone_cnt[vtx], nl)
            else:
                nc = _arc(nT, prism_nrm[pr, fe + 1], nl)
            face = one - wp.dot(nc, nT) <= tol2
            if face:
                nc = nT
        nw = R_p * nc
        onrm = -nw
        if prism_first:
            onrm = nw
        mcnt = int(0)
        if face and (to == SPHERE or to == CAPSULE or to == CYLINDER or to == BOX):
            q = wp.transpose(R_p) * (pos_o - pos_p)
            Rl = wp.transpose(R_p) * R_o
            flat = int(0)
            for e in range(3):
                if one - wp.dot(nT, prism_nrm[pr, e + 1]) <= tol2:
                    flat = flat | (1 << e)
            mcnt, mp, md = _face_manifold(to, q, Rl, size_o, a, b, c, nT, margin, flat)
            ocnt = mcnt
            for i in range(mcnt):
                opts[i] = pos_p + R_p * mp[i]
                od[i] = md[i]
            if mcnt == 0 and wide:
                ocnt = 1         # the face's columns may miss it at a convex edge: keep it
        if ocnt == 1 and mcnt == 0 and to == SPHERE:
            opts[0] = pos_o - nw * (size_o[0] + half * d[0])     # on the centre's line
    return ocnt, onrm, opts, od
