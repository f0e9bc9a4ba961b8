"""Kernels of a captured multi-worker step's replay (core/simulator.py, ``_Plan``): each worker replays
its whole share of a stretch of the step in one launch, the stages separated by a native barrier.

``run_plan`` (one thread) runs a worker's *plan*: a list of ops, each the replay of a captured CPU
graph (Warp's own replay function, called through its address) or a barrier across the partition's
workers. With ``mode`` MODE_SERVE it is a parked helper's whole life: it stays in the launch between
plans, waiting on its mailbox for the next job (a plan's ops for this worker) until asked to stop; with
MODE_LEAD worker 0 posts the helpers' jobs, runs its own ops and waits for the helpers to finish, so a
plan costs one launch from Python and no semaphore (core/simulator.py, ``_Parked``).
The body is C++ (``kernels/workers.cpp``): a barrier needs atomic read-modify-writes (Warp's
``atomic_add`` is a plain one on CPU, where a launch runs on one thread) and a wait that sleeps (a
futex on Linux) after a bounded spin, so that a waiting worker does not take the core of the worker
it waits for on a machine with fewer free cores than workers. CPU only.
"""

import ctypes
import pathlib
import platform
import re
import sys

import warp as wp

# forward only: nothing here is differentiated
wp.set_module_options({"enable_backward": False})

OP_REPLAY = 1
OP_BARRIER = 2
MODE_RUN, MODE_LEAD, MODE_SERVE = 0, 1, 2
# a parked helper's mailbox (int32 words; kernels/workers.cpp): the job generation, the job record's
# address (two words), the generation done, the sleep flags, the state (1 serving, 2 gone), the stop request
MAIL_WORDS = 64
MAIL_GEN, MAIL_JOB, MAIL_DONE, MAIL_STATE, MAIL_STOP = 0, 8, 16, 48, 49
# a job record (uint64): ops address, op count, barrier address, clocks address, clocks' length, status address
JOB_WORDS = 6
# helpers a lead posts to at most (kernels/workers.cpp): partitions with more workers use Python helpers
MAX_PARKED = 64
# barrier words (int32, a 64-byte line each): arrivals, generation, sleepers, abort flag
BAR_WORDS = 64
BAR_COUNT, BAR_GEN, BAR_SLEEPERS, BAR_ABORT = 0, 16, 32, 48
# a waiting worker's checks before it sleeps: after a pause instruction (~10-25 ns each here), then
# after a sched_yield (~1 µs on an idle core); measured in benchmarks/results/fem.md
SPIN = 100
YIELDS = 50

_FUNC = re.compile(r"^// @func (\w+)\s*$", re.M)


def _body(name: str) -> str:
    parts = _FUNC.split(pathlib.Path(__file__).with_suffix(".cpp").read_text())
    return dict(zip(parts[1::2], parts[2::2]))[name]


@wp.func_native(_body("run_plan_native"))
def run_plan_native(
    plan: wp.array(dtype=wp.uint64),
    n_ops: int,
    bar: wp.array(dtype=wp.int32),
    workers: int,
    natives: wp.array(dtype=wp.uint64),
    spin: int,
    yields: int,
    times: wp.array(dtype=wp.int64),
    mode: int,
    mail: wp.array(dtype=wp.int32),
    jobs: wp.array(dtype=wp.uint64),
) -> int:
    """One worker's plan (kernels/workers.cpp): 0, k + 1 when op k's replay failed, -1 when aborted,
    -3 - h (MODE_LEAD) when helper h was not serving; MODE_SERVE: 0 once stopped."""
    ...


@wp.kernel
def run_plan(
    # Model:
    plan: wp.array(dtype=wp.uint64),
    n_ops: int,
    workers: int,
    natives: wp.array(dtype=wp.uint64),
    spin: int,
    yields: int,
    mode: int,
    jobs: wp.array(dtype=wp.uint64),
    # Data in/out:
    bar: wp.array(dtype=wp.int32),
    mail: wp.array(dtype=wp.int32),
    # Data out:
    status_out: wp.array(dtype=wp.int32),
    times_out: wp.array(dtype=wp.int64),
):
    """Launched with one thread by each worker: its plan's ops in turn (MODE_RUN; MODE_LEAD: with the
    parked helpers' jobs in ``jobs``), or a parked helper's service (MODE_SERVE, its mailbox ``mail``);
    the status in status_out[0]."""
    status_out[0] = run_plan_native(plan, n_ops, bar, workers, natives, spin, yields, times_out, mode, mail, jobs)


def _address(fn) -> int:
    return ctypes.cast(fn, ctypes.c_void_p).value or 0


# the futex system call's number where it is known (Linux: x86-64 202, AArch64 98)
_FUTEX = {"x86_64": 202, "amd64": 202, "aarch64": 98, "arm64": 98}


def available(graphs) -> bool:
    """Whether this Warp exposes what ``run_plan`` uses: its CPU graph replay function and each of
    ``graphs``' replay state (private parts of Warp 1.19; without them the simulator keeps the
    per-stage replay)."""
    try:
        from warp._src.context import runtime

        return hasattr(runtime.core, "wp_apic_cpu_replay_state") and all(getattr(g, "apic_state", None) for g in graphs)
    except Exception:
        return False


def natives() -> list[int]:
    """The native addresses ``run_plan`` calls: [Warp's CPU graph replay, libc ``syscall``, the futex
    number (0: none), ``sched_yield`` (0: none), ``clock_gettime`` (0: none)]."""
    from warp._src.context import runtime

    replay = _address(runtime.core.wp_apic_cpu_replay_state)
    sys_fn = futex = yld = clk = 0
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None)
        futex = _FUTEX.get(platform.machine().lower(), 0)
        sys_fn = _address(libc.syscall) if futex else 0
        yld, clk = _address(libc.sched_yield), _address(libc.clock_gettime)
    elif sys.platform == "darwin":
        libc = ctypes.CDLL(None)
        yld, clk = _address(libc.sched_yield), _address(libc.clock_gettime)
    elif sys.platform == "win32":
        yld = _address(ctypes.windll.kernel32.SwitchToThread)
    return [replay, sys_fn, futex, yld, clk]
