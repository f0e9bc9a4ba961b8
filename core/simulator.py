"""The Simulator: runs the substep loop over env partitions, captures it as Warp graphs, and checks
device-side flags after each step.

Per step: for each substep f (h = dt/N): the fast path ``solver.substep`` when one solver and no
coupler are active, otherwise ``coupler.preprocess -> solver.substep_pre_coupling (each) ->
coupler.couple -> solver.substep_post_coupling (each)``; then ``solver.end_step`` (clear external
forces), the sensors (every group's ground truth, then the measurement models: a bounded number of
launches however many envs and sensors, ``polyphys.sensors.SensorHub.evaluate``) and the NaN check.
On CPU the envs are split into partitions, each stepped by a worker thread
with its own captured graph (Warp releases the GIL while a launch or a replay runs).
"""

from __future__ import annotations

import concurrent.futures as cf
import warnings

import numpy as np

from .concurrency import WARP_LOCK
from .errors import SimulationError
from .layout import Layout, Partition


class Simulator:
    def __init__(self, scene, solvers: list, couplers: list, layout: Layout, graph_capture: bool,
                 nan_policy: str, sensors=None):
        import warp as wp

        self.scene = scene
        self.solvers = solvers
        self.couplers = couplers
        self.sensors = sensors          # the scene's SensorHub, or None
        self.layout = layout
        self.parts: tuple[Partition, ...] = layout.partitions
        self.graph_capture = graph_capture
        self.nan_policy = nan_policy
        self.fast_path = len(solvers) == 1 and not couplers
        self.nan_flags = wp.zeros(layout.n_envs, dtype=wp.int32, device=layout.device)
        self._graphs: list | None = None
        self._warm = False
        self._pool = cf.ThreadPoolExecutor(len(self.parts)) if len(self.parts) > 1 else None
        self.n_steps = 0

    # -- one partition's step: exactly the launches a graph records -----------------------------
    def _step_part(self, part: Partition) -> None:
        n = self.layout.substeps
        for f in range(n):
            if self.fast_path:
                self.solvers[0].substep(f, part)
            else:
                for c in self.couplers:
                    c.preprocess(f, part)
                for s in self.solvers:
                    s.substep_pre_coupling(f, part)
                for c in self.couplers:
                    c.couple(f, part)
                for s in self.solvers:
                    s.substep_post_coupling(f, part)
        for s in self.solvers:
            s.end_step(part)
        if self.sensors is not None:
            self.sensors.evaluate(part)
        for s in self.solvers:
            s.nan_check(part, self.nan_flags)

    def _capture(self) -> None:
        import warp as wp

        graphs = []
        for part in self.parts:
            with wp.ScopedDevice(self.layout.device):
                with wp.ScopedCapture(device=self.layout.device, force_module_load=False) as cap:
                    self._step_part(part)
            graphs.append(cap.graph)
        self._graphs = graphs

    def invalidate(self) -> None:
        """Forget captured graphs (after a solver reallocated arrays)."""
        self._graphs = None

    def _run_parts(self, fn) -> None:
        if self._pool is None:
            for i, part in enumerate(self.parts):
                fn(i, part)
            return
        futures = [self._pool.submit(fn, i, part) for i, part in enumerate(self.parts)]
        # wait for every partition before raising: no partition may still run into the next call
        cf.wait(futures)
        for fut in futures:
            fut.result()

    def step(self) -> None:
        """One step of every partition, then the device-side checks. Locking (polyphys.concurrency):
        the replay of captured graphs holds the process-wide Warp lock shared, so scenes in other
        threads replay at the same time; the first step (module loading), the capture, uncaptured
        steps and the checks after the step hold it exclusively."""
        import warp as wp

        if self.graph_capture and self._warm and self._graphs is not None:
            graphs = self._graphs
            with WARP_LOCK.shared():
                self._run_parts(lambda i, part: wp.capture_launch(graphs[i]))
        else:
            with WARP_LOCK.exclusive():
                self._step_exclusive()
        self.n_steps += 1
        with WARP_LOCK.exclusive():
            self._after_step()

    def _step_exclusive(self) -> None:
        import warp as wp

        if self.graph_capture and self._warm:
            self._capture()
            graphs = self._graphs
            self._run_parts(lambda i, part: wp.capture_launch(graphs[i]))
            return

        def run(i, part):
            with wp.ScopedDevice(self.layout.device):
                self._step_part(part)

        if self._warm:
            self._run_parts(run)
        else:
            # first step on one thread: Warp compiles/loads modules here, and two threads loading
            # the same module at once would compile it twice
            for i, part in enumerate(self.parts):
                run(i, part)
            self._warm = True     # modules are loaded: later steps may be captured

    def _after_step(self) -> None:
        for s in self.solvers:
            s.check_after_step()
        for c in self.couplers:
            if hasattr(c, "check_after_step"):
                c.check_after_step()
        flags = self.nan_flags.numpy()
        bad = np.nonzero(flags)[0]
        if bad.size == 0:
            return
        self.nan_flags.zero_()
        envs = bad.tolist()
        if self.nan_policy == "raise":
            raise SimulationError(f"non-finite state (NaN/inf) in env(s) {envs} after step "
                                  f"{self.n_steps}; SimOptions(nan_policy='reset') resets them instead")
        warnings.warn(f"non-finite state (NaN/inf) in env(s) {envs} after step {self.n_steps}: those "
                      f"envs were reset to the initial state (other envs untouched); see "
                      f"scene.nan_envs", stacklevel=3)
        self.scene._reset_envs_after_nan(bad)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False)
            self._pool = None
