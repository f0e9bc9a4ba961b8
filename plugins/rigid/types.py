"""Codes and typed containers of the rigid solver (MuJoCo Warp's types.py).

Codes are the ``enum.IntEnum``s of codes.py (re-exported here; joint and geom types are core's
``JointType``, ``GeomType``); Warp kernels compare with the members directly and the native C++
stage bodies get them as constants generated from these enums (kernels/native.py). ``Model`` and ``Data`` are Warp
structs, one pair per precision (``MODEL[precision]``, ``DATA[precision]``, built by the same two
factories below so the field list exists once): every stage kernel takes ``(m, d)``. Their
docstrings list every field with its shape, dtype and unit; tests/rigid/test_rigid_types.py checks
the lists against the struct fields.

Shapes: ``n`` is the number of envs of the view (the whole batch, or one partition: per-env arrays
are sliced per partition, shared arrays are the same in every view). Per-env arrays keep at least
one column (Warp cannot slice a zero-width array); the counts (``nv``, ``na``, ...) are exact.
Warp stores quaternions (x, y, z, w); spatial vectors are (angular, linear) pairs of vec3 about the
link's tree reference point ``link_pos[link_root[l]]`` (docs/rigid.md, "Internals").
"""


import warp as wp

from .codes import (  # noqa: F401
    NATIVE_CODES,
    ConeType,
    ConstraintType,
    CtrlMode,
    EfcState,
    EqType,
    GeomType,
    IntegratorType,
    JointType,
    ResolutionType,
    SolverType,
)

__all__ = ["JointType", "GeomType", "CtrlMode", "IntegratorType", "ConstraintType", "EqType", "ConeType",
           "SolverType", "ResolutionType", "EfcState", "MODEL", "DATA", "OPTION", "PER_ENV_MODEL_FIELDS",
           "overload", "overloads", "declare_overloads"]


_OPTION_DOC = """Solver settings the kernels read (``m.opt``), resolved from RigidOptions at build (docs/semantics.md §R2).

    Fields (name: dtype [unit]: meaning):

        timestep: float [s]: the substep h = dt / substeps
        gravity: vec3 [m/s²]: gravitational acceleration
        integrator: int: IntegratorType
        cone: int: ConeType
        solver: int: SolverType
        resolution: int: ResolutionType
        iterations: int: solver iteration cap
        tolerance: float: stopping tolerance of the scaled improvement and gradient (docs/semantics.md §R8)
        ls_iterations: int: line-search iteration cap
        ls_tolerance: float: line-search tolerance (fraction of the initial slope)
        impratio: float: ratio of frictional to normal impedance
        tc_floor: float [s]: floor of a positive timeconst (2h; MuJoCo-compatible: 2·timestep)
        friction_floor: float: floor of every mixed contact friction coefficient (docs/semantics.md §R5; 1e-5 MuJoCo)
        mujoco_mode: int: 1 = MuJoCo's contact parameter mixing (mj_contactParam), 0 = docs/semantics.md §R5's
        warm_pick_lower: int: 1 = warm start from the lower-cost of the warm start and qacc_smooth
        stop_needs_gradient: int: 1 = the convex Newton stop needs the gradient test too (docs/semantics.md §R8)
        noslip_iterations: int: noslip sweeps after the main solve (0: off)
        noslip_tolerance: float: noslip stop on the scaled sweep improvement
        noslip_scale: float [1/(kg·m²)]: noslip improvement scale (0: 1/trace M per env)
        islands: int: 1 = the convex solve runs island by island (label_islands; docs/semantics.md §R8)
"""

_MODEL_DOC = """The device model: constants of the tree, actuators, constraints and contact parameters.

    Shared arrays are the same in every view; per-env arrays (marked ``(n, ...)``) hold domain
    randomisation and are sliced per partition. Built by model.py (the only host-to-device
    boundary). Codes: JointType, EqType.

    Fields (name: shape, dtype [unit]: meaning):

        opt: Option: solver settings
        nq: int: generalized coordinates
        nv: int: degrees of freedom
        nl: int: links
        nj: int: joints
        na: int: actuators
        nnz: int: stored entries of the tree-sparse mass matrix
        nlim: int: limited hinge/slide/ball joints
        neq: int: equality constraints
        ngeom: int: geoms of the contact parameter tables
        max_rows: int: constraint row budget per env
        max_con: int: contact budget per env (after pruning)
        link_parent: (nl,) int: parent link, -1 for the world
        link_root: (nl,) int: root link of the link's tree (its origin is the reference point)
        link_pos0: (nl,) vec3 [m]: link origin in the parent frame at q = ref
        link_quat0: (nl,) quat: link orientation in the parent frame at q = ref
        link_joint_adr: (nl + 1,) int: first joint of each link (joints of link l: [adr[l], adr[l+1]))
        link_dof_adr: (nl + 1,) int: first dof of each link
        link_dof_last: (nl,) int: deepest dof moving the link (-1: fixed to the world)
        link_gravcomp: (nl,) float: gravity compensation fraction (MJCF gravcomp × RigidOptions scale)
        link_invweight: (nl, 2) float [1/kg, 1/(kg·m²)]: translational / rotational inverse weight at qpos0
        link_mass: (n, nl) float [kg]: link mass (per env)
        link_com: (n, nl) vec3 [m]: CoM in the link frame (per env)
        link_inertia: (n, nl) mat33 [kg·m²]: inertia about the CoM, link frame (per env)
        joint_type: (nj,) int: JointType
        joint_q_start: (nj,) int: first q of the joint
        joint_dof_start: (nj,) int: first dof of the joint
        joint_pos: (nj,) vec3 [m]: joint anchor in the link frame
        joint_axis: (nj,) vec3: unit axis (link frame) of a hinge/slide
        joint_ref: (nj,) float [rad or m]: q at which the hinge/slide is at rest in the link frame
        joint_springref: (nj,) float [rad or m]: spring rest position
        joint_midpoint: (nj,) int: 1 = free joint eligible for the implicit midpoint branch (docs/semantics.md §R2)
        joint_gyro: (nj,) int: standalone free joint (docs/semantics.md §R2a): 1 = childless link, 2 = fixed-joint descendants
        dof_parent: (nv,) int: parent dof in the dof tree (-1: root)
        dof_madr: (nv,) int: address of row i of the tree-sparse mass matrix
        dof_depth: (nv,) int: dof ancestors of dof i (row i holds depth + 1 entries)
        dof_link: (nv,) int: link the dof moves
        dof_joint: (nv,) int: joint of the dof
        m_col: (nnz,) int: column of each stored mass-matrix entry
        dof_invweight: (nv,) float [1/kg or 1/(kg·m²)]: diagonal of M⁻¹ at qpos0, averaged per joint
        dof_damping: (n, nv) float [N·s/m or N·m·s/rad]: joint damping (per env)
        dof_armature: (n, nv) float [kg or kg·m²]: armature (per env)
        dof_stiffness: (n, nv) float [N/m or N·m/rad]: joint stiffness (per env)
        dof_kp: (n, nv) float [N/m or N·m/rad]: PD position gain (per env)
        dof_kv: (n, nv) float [N·s/m or N·m·s/rad]: PD / velocity gain (per env)
        dof_force_lo: (n, nv) float [N or N·m]: lower bound of the control force (per env)
        dof_force_hi: (n, nv) float [N or N·m]: upper bound of the control force (per env)
        dof_frictionloss: (n, nv) float [N or N·m]: DOF friction loss (per env)
        dof_sol: (n, nv, 7) float: sol_params of the frictionloss rows (per env; docs/semantics.md §R6)
        act_dof: (na,) int: dof the actuator drives (joint transmission)
        act_qadr: (na,) int: q of the actuated joint
        act_gear: (na,) float: gear ratio
        act_gain: (na,) vec3: gain parameters (g0, g1, g2): gain = g0 + g1·len + g2·vel
        act_bias: (na,) vec3: bias parameters (b0, b1, b2): bias = b0 + b1·len + b2·vel
        act_ctrl_lo: (na,) float: ctrl lower bound (-inf: unlimited)
        act_ctrl_hi: (na,) float: ctrl upper bound (inf: unlimited)
        act_force_lo: (na,) float [N or N·m]: actuator force lower bound
        act_force_hi: (na,) float [N or N·m]: actuator force upper bound
        lim_dof: (nlim,) int: first dof of the limited joint
        lim_qadr: (nlim,) int: first q of the limited joint
        lim_ball: (nlim,) int: 1 = ball joint (limited on its rotation angle), 0 = hinge/slide
        lim_range: (nlim, 2) float [rad or m]: joint range (ball: (0, max angle))
        lim_margin: (nlim,) float [rad or m]: row activation margin
        lim_sol: (n, nlim, 7) float: sol_params of the limit rows (per env; docs/semantics.md §R6)
        eq_type: (neq,) int: EqType
        eq_obj: (neq, 4) int: connect/weld (link1, link2 (-1: world), -, -); joint (qadr1, qadr2 or -1, dof1, dof2)
        eq_data: (neq, 11) float: MuJoCo's eq_data (connect anchors [m]; weld anchor, relpose, torquescale; joint refs, polycoef)
        eq_sol: (n, neq, 7) float: sol_params of the equality rows (per env)
        geom_sol: (ngeom, 7) float: contact sol_params of each geom
        geom_solmix: (ngeom,) float: MuJoCo's solmix
        geom_priority: (ngeom,) int: MuJoCo's priority
        geom_condim: (ngeom,) int: contact dimensionality (1, 3, 4, 6)
        geom_friction: (n, ngeom, 3) float: sliding, torsional [m], rolling [m] friction (per env)
        geom_friction_ratio: (n, ngeom) float: friction scale (per env; docs/semantics.md §R5)
        pair_condim: (npair,) int: condim of an explicit contact pair
        pair_friction: (n, npair, 5) float: its 5 friction coefficients (per env)
        pair_sol: (npair, 7) float: its sol_params
        pair_solreffriction: (npair, 2) float: solref of its elliptic friction rows ((0, 0): the pair's solref)
"""

_DATA_DOC = """Per-env device arrays: state, per-substep derived quantities, contacts and constraint rows.

    Every array has the batch axis first (``n``: the envs of the view); a partition's view slices
    the batch arrays. Built by model.py (``make_data``). The stage that writes each group is named
    on its heading line.

    Fields (name: shape, dtype [unit]: meaning):

        qpos: (n, nq) float [m, rad; quaternion w x y z]: generalized coordinates (state)
        qvel: (n, nv) float [m/s, rad/s]: dof velocities, MuJoCo's qvel convention (state)
        ctrl: (n, na) float: actuator controls (state)
        dof_mode: (n, nv) int: CtrlMode of each dof (state)
        dof_target_pos: (n, nv) float [rad or m]: PD target, q − ref units (state)
        dof_target_vel: (n, nv) float [rad/s or m/s]: velocity target (state)
        dof_target_force: (n, nv) float [N·m or N]: force command (state)
        qfrc_applied: (n, nv) float [N·m or N]: applied dof forces for the next step (state)
        xfrc_force: (n, nl) vec3 [N]: external force at the link CoM, world, for the next step (state)
        xfrc_torque: (n, nl) vec3 [N·m]: external torque, world, for the next step (state)
        root_pos: (n, nl) vec3 [m]: placement of the links whose parent is the world (state)
        root_quat: (n, nl) quat: their orientation (state)
        eq_active: (n, neq) int: 1 = the equality makes rows (state)
        qacc_warmstart: (n, nv) float [m/s², rad/s²]: constrained acceleration of the last solve, the next warm start (state)
        coupling_force: (n, nl) vec3 [N]: a coupler's reaction at the CoM, world, for one substep
        coupling_torque: (n, nl) vec3 [N·m]: its torque about the CoM, world
        -- kinematics (stage kinematics.py):
        link_pos: (n, nl) vec3 [m]: link frame origin, world
        link_quat: (n, nl) quat: link orientation, world
        link_vel: (n, nl) vec3 [m/s]: velocity of the link origin, world
        link_ang: (n, nl) vec3 [rad/s]: angular velocity, world
        link_xipos: (n, nl) vec3 [m]: link CoM, world
        link_com_vel: (n, nl) vec3 [m/s]: velocity of the link CoM, world
        joint_anchor: (n, nj) vec3 [m]: joint anchor, world (*)
        joint_xaxis: (n, nj) vec3: hinge/slide axis, world (*)
        dof_ref: (n, nv) vec3 [m]: reference point of the dof's motion subspace (its tree root's origin)
        cinert_m: (n, nl) float [kg]: link mass (spatial inertia)
        cinert_mc: (n, nl) vec3 [kg·m]: mass × CoM offset from the reference point
        cinert_i: (n, nl) mat33 [kg·m²]: rotational inertia about the reference point, world
        cvel_w: (n, nl) vec3 [rad/s]: link spatial velocity, angular part
        cvel_v: (n, nl) vec3 [m/s]: linear part (velocity of the body point at the reference point)
        cdof_w: (n, nv) vec3 [rad/unit]: dof motion subspace, angular part
        cdof_v: (n, nv) vec3 [m/unit]: linear part
        cdofdot_w: (n, nv) vec3: time derivative of cdof_w (cvel × cdof)
        cdofdot_v: (n, nv) vec3: time derivative of cdof_v
        -- inertia (stage inertia.py):
        crb_m: (n, nl) float [kg]: composite (subtree) mass (*)
        crb_mc: (n, nl) vec3 [kg·m]: composite first moment (*)
        crb_i: (n, nl) mat33 [kg·m²]: composite rotational inertia about the reference point (*)
        mass: (n, nnz) float: mass matrix with armature, tree-sparse (row i at dof_madr[i])
        -- bias (stage bias.py):
        cacc_w: (n, nl) vec3 [rad/s²]: bias acceleration (qacc = 0) of the link, angular part, with −g at the roots (*)
        cacc_v: (n, nl) vec3 [m/s²]: linear part (*)
        cfrc_t: (n, nl) vec3 [N·m]: subtree bias force, torque part (RNE backward pass) (*)
        cfrc_f: (n, nl) vec3 [N]: force part (*)
        cext_t: (n, nl) vec3 [N·m]: subtree external wrench (gravity compensation, xfrc, coupling), torque (*)
        cext_f: (n, nl) vec3 [N]: force part (*)
        (*) the smooth pass's intermediates (model.SMOOTH_SCRATCH_FIELDS): written and read inside each env's pass,
            read by no later stage, getter or sensor; on CPU one env's block per View (strides[0] = 0, as the
            solve's scratch; model._smooth_scratch = False before the build: per env), so after a launch they hold
            the View's last env's values (docs/rigid.md "The smooth pass's intermediates")
        qfrc_bias: (n, nv) float [N·m or N]: Coriolis, centrifugal and gravity forces (MuJoCo's qfrc_bias)
        qfrc_ext: (n, nv) float [N·m or N]: gravity compensation and link wrenches
        -- actuation (stage actuation.py):
        qfrc_passive: (n, nv) float [N·m or N]: damping and springs
        qfrc_actuator: (n, nv) float [N·m or N]: MJCF actuators
        qfrc_control: (n, nv) float [N·m or N]: PD / velocity / force control
        qfrc_smooth: (n, nv) float [N·m or N]: passive + actuator + control + applied + ext − bias
        dof_dv: (n, nv) float: velocity derivative D of the dof forces (damping, actuator/PD kv) for the integrator
        act_force: (n, na) float [N or N·m]: actuator force
        -- factorization (stage factorization.py):
        qld: (n, nnz) float: LᵀDL factor of M + h_D·D (unit L off the diagonal, D on it) (*: read only by the solve
            of the pass that factors it)
        qld_int: (n, nnz) float: LᵀDL factor of M + h·D for the integration's solve after the constraint solve
            (MuJoCo-compatible implicitfast / Euler; written by the smooth pass, factorization.crb_factor_solve)
        qacc_smooth: (n, nv) float [m/s², rad/s²]: the unconstrained acceleration the constraint solve starts from
        qacc: (n, nv) float [m/s², rad/s²]: acceleration of the last step's integration (or forward's M⁻¹f)
        qM: (n, nv, nv) float: dense mass matrix the constraint solve uses (approximate_implicitfast: M + h·D)
            (M's tree pattern, zeros off it; written by the convex solve at each env's start, for the signorini
            solve by the smooth pass, factorization.mass_dense's body either way). On CPU with the convex resolution
            and no noslip it is the solve's scratch too (model._qm_scratch, docs/constraint.md "The solve's
            scratch"): one block per View (strides[0] = 0) holding the View's last solved env's M; per env otherwise
            and after the SAP hand-off. The mass matrix getters read ``mass``, not qM
        -- integration (stage integration.py):
        qfrc_total: (n, nv) float [N·m or N]: the force the integrating solve used (smooth + constraint)
        joint_mid_active: (n, nj) int: 1 = the free joint took the implicit midpoint branch this substep
        -- contacts (collision stage export; stage constraint_rows.py: parameters):
        ncon: (n,) int: contacts handed to the constraint rows
        con_pos: (n, max_con) vec3 [m]: contact point, world (the collision pipeline's contact_pos)
        con_frame: (n, max_con) mat33: rows normal (B to A), tangent 1, tangent 2 (the pipeline's contact_frame)
        con_dist: (n, max_con) float [m]: signed distance (< 0: penetration)
        con_margin: (n, max_con) float [m]: distance below which the contact makes rows (the pipeline's
            contact_includemargin)
        con_link: (n, max_con, 2) int: links of geom A and geom B (-1: world)
        con_geom: (n, max_con, 2) int: geoms A and B (the collision pipeline's contact_geom)
        con_pair: (n, max_con) int: explicit pair index, -1 for a dynamic pair
        con_dim: (n, max_con) int: condim of the contact
        con_friction: (n, max_con, 5) float: mixed friction (sliding, sliding, torsional, rolling, rolling)
        con_sol: (n, max_con, 7) float: mixed sol_params
        con_solreffriction: (n, max_con, 2) float: solref of the elliptic friction rows ((0, 0): con_sol's)
        con_efc_adr: (n, max_con) int: first row of the contact (-1: none)
        -- constraint rows (stage constraint_rows.py):
        nefc: (n,) int: rows built
        efc_overflow: (n,) int: 1 = the row budget was exceeded this substep
        efc_off: (n,) int: where the env's rows lie in the row pool: its row r of every row array below that is
            sized by max_rows (model.ROW_POOL_FIELDS) is row r + efc_off of its own block — on CPU (the row
            pool, model._row_pool) right after the previous env's rows in the View (efc_off[e] = adr[e] − e·max_rows,
            adr[e] = adr[e − 1] + nefc[e − 1]), so rows past an env's count are the next env's; 0 (CUDA, the SAP
            hand-off): each env's own block. Kernels read the rows through kernels/row_pool.py ``pool_rows``,
            host readers through model.pool_rows_host (docs/constraint.md, "The row pool")
        eq_acc_bias: (n, neq, 6) float [m/s², rad/s²]: J̇·q̇ of connect/weld rows
        efc_J: (n, max_rows, nv) float: row Jacobians
        efc_span: (n, max_rows, 2) int: dof columns [lo, hi) holding every nonzero of the row (built
            from the rows' dof chains; lo >= hi: empty); the row products skip the columns outside
        efc_chain: (n, max_rows, 2) int: a contact row's two links (−1: world) whose dof chains hold all
            its nonzeros, −2: none recorded (make_rows' clear zeroes those chains only while their column
            span is the row's span, and a pyramidal contact of the same two links overwrites them without
            zeroing; any other writer of a row sets its span or −2 here)
        efc_seg: (n, max_rows, 4) int: the row's nonzero segments lo, g0, g1, hi (its nonzeros lie in [lo, g0)
            and [g1, hi): the first and last nonzero and the longest inner run of zeros), recorded by make_rows
            while it writes the row and read by the convex solve; lo = −1: none recorded (the solve scans the
            row inside efc_span; any other writer of a row sets −1 here)
        efc_type: (n, max_rows) int: ConstraintType
        efc_id: (n, max_rows) int: the equality, dof, contact or limit the row belongs to
        efc_dim: (n, max_rows) int: elliptic normal rows: cone dimension
        efc_pos: (n, max_rows) float [m or rad]: constraint position
        efc_margin: (n, max_rows) float [m or rad]: margin
        efc_vel: (n, max_rows) float: J·qvel
        efc_aref: (n, max_rows) float: reference acceleration
        efc_R: (n, max_rows) float: regularization
        efc_D: (n, max_rows) float: 1/R
        efc_imp: (n, max_rows) float: impedance
        efc_frictionloss: (n, max_rows) float [N or N·m]: friction loss of a FRICTION row
        efc_mu: (n, max_rows) float: elliptic normal row: regularized cone slope; friction rows: coefficient
        -- convex / signorini / noslip solve (stages convex_solve.py, signorini_solve.py, noslip.py). The solve's
            scratch (model.SCRATCH_FIELDS: efc_MiJ, solver_H … solver_ma0 here, island_scratch and the island problem
            iM … ifrc_constraint below) is written by an env's solve before it is read and read by nothing after it:
            on CPU one env's block per View, seen by all its envs (strides[0] = 0; docs/constraint.md, "The solve's
            scratch"), so after a launch it holds the View's last env's values:
        efc_force: (n, max_rows) float [N or N·m]: row forces
        efc_state: (n, max_rows) int: EfcState
        efc_pad: (n,) int: the row from which the env's efc_force / efc_state hold the padding (0, INACTIVE) the
            convex solve leaves past the count: the solve writes only the rows from its count up to it, then sets
            it to its count (a writer of those rows past the count that is not the solve sets it to max_rows)
        efc_load: (n, max_rows) float [N]: signorini: latched normal load (elliptic normal rows)
        efc_dload: (n, max_rows) float [N]: signorini: its last change
        efc_MiJ: (n, max_rows, nv) float: noslip: M⁻¹Jᵀ of each row
        qfrc_constraint: (n, nv) float [N·m or N]: Jᵀ·efc_force
        solver_H: (n, nv, nv) float: Newton Hessian / its Cholesky factor
        solver_LM: (n, nv, nv) float: Cholesky factor of M (CG preconditioner, noslip)
        solver_jar: (n, max_rows) float: J·qacc − aref
        solver_jv: (n, max_rows) float: J·search
        solver_grad: (n, nv) float: gradient of the cost
        solver_mgrad: (n, nv) float: M⁻¹·gradient (CG)
        solver_mgrad_old: (n, nv) float: previous M⁻¹·gradient (CG)
        solver_search: (n, nv) float: search direction
        solver_ma: (n, nv) float: M·(qacc − qacc_smooth)
        solver_mv: (n, nv) float: M·search
        solver_ma0: (n, nv) float: unused (M·qacc_smooth until Round 16 of benchmarks/results/constraint.md: no reader)
        solver_niter: (n,) int: iterations of the last solve
        solver_stat: (n, 3) float: (scaled improvement, scaled gradient, cost) of the last iteration
        solver_nhalf: (n,) int: signorini: halved load changes of the last solve
        -- constraint islands (convex solve with m.opt.islands = 1; else one element along each axis):
        nisland: (n,) int: islands of the last solve (0: no rows)
        island_niter: (n, nv) int: iterations of each island in the last solve (first nisland entries)
        dof_island: (n, nv) int: island of each dof (−1: in no island, takes qacc_smooth)
        efc_island: (n, max_rows) int: island of each row
        island_dofadr: (n, nv + 1) int: island k's dofs are island_dofs[adr[k]:adr[k+1]]
        island_dofs: (n, nv) int: the dofs of each island, ascending
        dof_idof: (n, nv) int: index of the dof inside its island (−1: none)
        island_efcadr: (n, nv + 1) int: island k's rows are island_efcs[adr[k]:adr[k+1]]
        island_efcs: (n, max_rows) int: the rows of each island, ascending
        island_scratch: (n, 3, nv + 1) int: labelling scratch (union-find, counts, island of a tree)
        island_key_nefc: (n,) int: rows of the last relabelling (−1: labels invalid, relabel); the labels are
            kept while the inputs below are unchanged (label_islands)
        island_key_type: (n, max_rows) int: each row's ConstraintType at the last relabelling
        island_key_id: (n, max_rows) int: each row's efc_id at the last relabelling
        island_key_link: (n, max_con, 2) int: con_link of the contacts with rows at the last relabelling
        iM: (n, nv, nv) float: M of the island being solved (its first nd × nd block; Newton: packed, the block's
            rows one after another at stride nd from the env's first entry)
        iefc_J: (n, max_rows, nv) float: its rows' J over its dofs (Newton: packed at row stride nd, as iM)
        iefc_span: (n, max_rows, 4) int: their nonzero segments over the island's dofs (lo, g0, g1, hi, as efc_seg)
        iefc_type: (n, max_rows) int: their ConstraintType
        iefc_dim: (n, max_rows) int: their cone dimension
        iefc_state: (n, max_rows) int: their EfcState
        iefc_D: (n, max_rows) float: their D
        iefc_R: (n, max_rows) float: their R
        iefc_frictionloss: (n, max_rows) float [N or N·m]: their friction loss
        iefc_mu: (n, max_rows) float: their efc_mu
        iefc_aref: (n, max_rows) float: their aref
        iefc_force: (n, max_rows) float [N or N·m]: their forces
        iefc_jar: (n, max_rows) float: their J·qacc − aref
        igrad: (n, nv) float: the cost gradient on the island's dofs
        ima: (n, nv) float: M·(qacc − qacc_smooth) on the island's dofs
        iacc_smooth: (n, nv) float: qacc_smooth of the island's dofs
        iacc: (n, nv) float: qacc of the island's dofs
        ifrc_constraint: (n, nv) float: Jᵀf of the island's dofs
        noslip_niter: (n,) int: noslip sweeps of the last solve
        noslip_stat: (n,) float: scaled improvement of the last noslip sweep
        -- contact forces (stage contact_forces.py):
        con_wrench: (n, max_con, 6) float [N, N·m]: (F_n, F_t1, F_t2, T_n, T_t1, T_t2) on geom A, contact frame
        con_force_world: (n, max_con) vec3 [N]: force on geom A, world
        con_torque_world: (n, max_con) vec3 [N·m]: couple on geom A about the contact point, world
        con_valid: (n, max_con) int: 1 = the slot holds a contact with rows
        link_contact_force: (n, nl) vec3 [N]: net contact force on the link, world (last substep)
        link_contact_torque: (n, nl) vec3 [N·m]: net contact torque about the link CoM, world
        link_impulse_force: (n, nl) vec3 [N·s]: Σ h·force over the last step's substeps (state)
        link_impulse_torque: (n, nl) vec3 [N·m·s]: Σ h·torque over the last step's substeps (state)
        -- readback (stage readback.py; runs only once a sensor or a readback getter asked):
        snap_qpos: (n, nq) float: qpos of the state the readback belongs to (the last substep's start)
        snap_qvel: (n, nv) float: its qvel
        snap_qacc: (n, nv) float [m/s², rad/s²]: the acceleration of its solve (constraint solve, or M⁻¹·qfrc_smooth)
        snap_qfrc_actuator: (n, nv) float [N·m or N]: its qfrc_actuator
        snap_qfrc_constraint: (n, nv) float [N·m or N]: its qfrc_constraint
        snap_act_force: (n, na) float [N or N·m]: its actuator forces
        link_acc_ang: (n, nl) vec3 [rad/s²]: angular acceleration of the link, world
        link_acc: (n, nl) vec3 [m/s²]: linear acceleration of the link CoM, world (gravity not included)
        cfrc_int_force: (n, nl) vec3 [N]: force the parent exerts on the link through their joint, world (MuJoCo's cfrc_int)
        cfrc_int_torque: (n, nl) vec3 [N·m]: its torque about the link CoM
        cfrc_ext_force: (n, nl) vec3 [N]: external force on the link (applied, coupling, contacts, connect/weld; cfrc_ext)
        cfrc_ext_torque: (n, nl) vec3 [N·m]: its torque about the link CoM
"""

# Model fields with a batch axis (sliced per partition)
PER_ENV_MODEL_FIELDS = ("link_mass", "link_com", "link_inertia", "dof_damping", "dof_armature", "dof_stiffness",
                        "dof_kp", "dof_kv", "dof_force_lo", "dof_force_hi", "dof_frictionloss", "dof_sol", "lim_sol",
                        "eq_sol", "geom_friction", "geom_friction_ratio", "pair_friction")


def _option_struct(s):
    V = wp.types.vector(3, s)

    @wp.struct
    class Option:
        timestep: s
        gravity: V
        integrator: int
        cone: int
        solver: int
        resolution: int
        iterations: int
        tolerance: s
        ls_iterations: int
        ls_tolerance: s
        impratio: s
        tc_floor: s
        friction_floor: s
        mujoco_mode: int
        warm_pick_lower: int
        stop_needs_gradient: int
        noslip_iterations: int
        noslip_tolerance: s
        noslip_scale: s
        islands: int

    Option.__doc__ = _OPTION_DOC
    return Option


def _model_struct(s, Option):
    V = wp.types.vector(3, s)
    Q = wp.types.quaternion(s)
    M33 = wp.types.matrix((3, 3), s)
    I1, I2 = wp.array(dtype=wp.int32), wp.array2d(dtype=wp.int32)
    S1, S2, S3 = wp.array(dtype=s), wp.array2d(dtype=s), wp.array3d(dtype=s)

    @wp.struct
    class Model:
        opt: Option
        nq: int
        nv: int
        nl: int
        nj: int
        na: int
        nnz: int
        nlim: int
        neq: int
        ngeom: int
        max_rows: int
        max_con: int
        link_parent: I1
        link_root: I1
        link_pos0: wp.array(dtype=V)
        link_quat0: wp.array(dtype=Q)
        link_joint_adr: I1
        link_dof_adr: I1
        link_dof_last: I1
        link_gravcomp: S1
        link_invweight: S2
        link_mass: S2
        link_com: wp.array2d(dtype=V)
        link_inertia: wp.array2d(dtype=M33)
        joint_type: I1
        joint_q_start: I1
        joint_dof_start: I1
        joint_pos: wp.array(dtype=V)
        joint_axis: wp.array(dtype=V)
        joint_ref: S1
        joint_springref: S1
        joint_midpoint: I1
        joint_gyro: I1
        dof_parent: I1
        dof_madr: I1
        dof_depth: I1
        dof_link: I1
        dof_joint: I1
        m_col: I1
        dof_invweight: S1
        dof_damping: S2
        dof_armature: S2
        dof_stiffness: S2
        dof_kp: S2
        dof_kv: S2
        dof_force_lo: S2
        dof_force_hi: S2
        dof_frictionloss: S2
        dof_sol: S3
        act_dof: I1
        act_qadr: I1
        act_gear: S1
        act_gain: wp.array(dtype=V)
        act_bias: wp.array(dtype=V)
        act_ctrl_lo: S1
        act_ctrl_hi: S1
        act_force_lo: S1
        act_force_hi: S1
        lim_dof: I1
        lim_qadr: I1
        lim_ball: I1
        lim_range: S2
        lim_margin: S1
        lim_sol: S3
        eq_type: I1
        eq_obj: I2
        eq_data: S2
        eq_sol: S3
        geom_sol: S2
        geom_solmix: S1
        geom_priority: I1
        geom_condim: I1
        geom_friction: S3
        geom_friction_ratio: S2
        pair_condim: I1
        pair_friction: S3
        pair_sol: S2
        pair_solreffriction: S2

    Model.__doc__ = _MODEL_DOC
    return Model


def _data_struct(s):
    V = wp.types.vector(3, s)
    Q = wp.types.quaternion(s)
    M33 = wp.types.matrix((3, 3), s)
    I1, I2, I3 = wp.array(dtype=wp.int32), wp.array2d(dtype=wp.int32), wp.array3d(dtype=wp.int32)
    S1, S2, S3 = wp.array(dtype=s), wp.array2d(dtype=s), wp.array3d(dtype=s)
    V2 = wp.array2d(dtype=V)

    @wp.struct
    class Data:
        qpos: S2
        qvel: S2
        ctrl: S2
        dof_mode: I2
        dof_target_pos: S2
        dof_target_vel: S2
        dof_target_force: S2
        qfrc_applied: S2
        xfrc_force: V2
        xfrc_torque: V2
        root_pos: V2
        root_quat: wp.array2d(dtype=Q)
        eq_active: I2
        qacc_warmstart: S2
        coupling_force: V2
        coupling_torque: V2
        link_pos: V2
        link_quat: wp.array2d(dtype=Q)
        link_vel: V2
        link_ang: V2
        link_xipos: V2
        link_com_vel: V2
        joint_anchor: V2
        joint_xaxis: V2
        dof_ref: V2
        cinert_m: S2
        cinert_mc: V2
        cinert_i: wp.array2d(dtype=M33)
        cvel_w: V2
        cvel_v: V2
        cdof_w: V2
        cdof_v: V2
        cdofdot_w: V2
        cdofdot_v: V2
        crb_m: S2
        crb_mc: V2
        crb_i: wp.array2d(dtype=M33)
        mass: S2
        cacc_w: V2
        cacc_v: V2
        cfrc_t: V2
        cfrc_f: V2
        cext_t: V2
        cext_f: V2
        qfrc_bias: S2
        qfrc_ext: S2
        qfrc_passive: S2
        qfrc_actuator: S2
        qfrc_control: S2
        qfrc_smooth: S2
        dof_dv: S2
        act_force: S2
        qld: S2
        qld_int: S2
        qacc_smooth: S2
        qacc: S2
        qM: S3
        qfrc_total: S2
        joint_mid_active: I2
        ncon: I1
        con_pos: V2
        con_frame: wp.array2d(dtype=M33)
        con_dist: S2
        con_margin: S2
        con_link: I3
        con_geom: I3
        con_pair: I2
        con_dim: I2
        con_friction: S3
        con_sol: S3
        con_solreffriction: S3
        con_efc_adr: I2
        nefc: I1
        efc_overflow: I1
        efc_off: I1
        eq_acc_bias: S3
        efc_J: S3
        efc_span: I3
        efc_chain: I3
        efc_seg: I3
        efc_type: I2
        efc_id: I2
        efc_dim: I2
        efc_pos: S2
        efc_margin: S2
        efc_vel: S2
        efc_aref: S2
        efc_R: S2
        efc_D: S2
        efc_imp: S2
        efc_frictionloss: S2
        efc_mu: S2
        efc_force: S2
        efc_state: I2
        efc_pad: I1
        efc_load: S2
        efc_dload: S2
        efc_MiJ: S3
        qfrc_constraint: S2
        solver_H: S3
        solver_LM: S3
        solver_jar: S2
        solver_jv: S2
        solver_grad: S2
        solver_mgrad: S2
        solver_mgrad_old: S2
        solver_search: S2
        solver_ma: S2
        solver_mv: S2
        solver_ma0: S2
        solver_niter: I1
        solver_stat: S2
        solver_nhalf: I1
        nisland: I1
        island_niter: I2
        dof_island: I2
        efc_island: I2
        island_dofadr: I2
        island_dofs: I2
        dof_idof: I2
        island_efcadr: I2
        island_efcs: I2
        island_scratch: I3
        island_key_nefc: I1
        island_key_type: I2
        island_key_id: I2
        island_key_link: I3
        iM: S3
        iefc_J: S3
        iefc_span: I3
        iefc_type: I2
        iefc_dim: I2
        iefc_state: I2
        iefc_D: S2
        iefc_R: S2
        iefc_frictionloss: S2
        iefc_mu: S2
        iefc_aref: S2
        iefc_force: S2
        iefc_jar: S2
        igrad: S2
        ima: S2
        iacc_smooth: S2
        iacc: S2
        ifrc_constraint: S2
        noslip_niter: I1
        noslip_stat: S1
        con_wrench: S3
        con_force_world: V2
        con_torque_world: V2
        con_valid: I2
        link_contact_force: V2
        link_contact_torque: V2
        link_impulse_force: V2
        link_impulse_torque: V2
        snap_qpos: S2
        snap_qvel: S2
        snap_qacc: S2
        snap_qfrc_actuator: S2
        snap_qfrc_constraint: S2
        snap_act_force: S2
        link_acc_ang: V2
        link_acc: V2
        cfrc_int_force: V2
        cfrc_int_torque: V2
        cfrc_ext_force: V2
        cfrc_ext_torque: V2

    Data.__doc__ = _DATA_DOC
    return Data


OPTION = {"32": _option_struct(wp.float32), "64": _option_struct(wp.float64)}
MODEL = {p: _model_struct(s, OPTION[p]) for p, s in (("32", wp.float32), ("64", wp.float64))}
DATA = {"32": _data_struct(wp.float32), "64": _data_struct(wp.float64)}


# {kernel module name: [register(precision)]}: the overloads each stage module declares, registered
# per precision by declare_overloads (not at import: a module holds the precisions declared before it loads)
_OVERLOADS: dict = {}
_DECLARED: set = set()


def overloads(register):
    """Record ``register(scalar)``, which registers with ``wp.overload`` the overloads of its module's
    kernels for the Warp scalar type ``scalar``; declare_overloads calls it per precision."""
    _OVERLOADS.setdefault(register.__module__, []).append(register)
    return register


def overload(kernel, **extra):
    """Record the overloads of a stage kernel taking ``(m: Any, d: Any, ...)`` (registered per precision by
    declare_overloads); ``extra`` maps further generic parameters to a function of the scalar type giving
    their type."""
    def register(s):
        p = "64" if s is wp.float64 else "32"
        sig = {"m": MODEL[p], "d": DATA[p]}
        sig.update({k: f(s) for k, f in extra.items()})
        wp.overload(kernel, sig)

    _OVERLOADS.setdefault(kernel.func.__module__, []).append(register)
    return kernel


def declare_overloads(modules, precision: str) -> None:
    """Register the float32 ("32") or float64 ("64") overloads of the stage kernel modules ``modules``
    (once per module and precision), before they load: a module compiles with the precisions
    declared so far — the scene's only, unless a scene of the other precision ran in the same process
    (then the module gains the other overloads and is built again, once)."""
    s = wp.float64 if precision == "64" else wp.float32
    for mod in modules:
        key = (mod.__name__, precision)
        if key in _DECLARED:
            continue
        for register in _OVERLOADS.get(mod.__name__, ()):
            register(s)
        _DECLARED.add(key)
