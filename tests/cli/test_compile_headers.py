"""Parallel first-run compile (core/startup.py, ``_HeaderPool``): Warp's CPU compiler precompiles its
builtin header once per thread and per optimization level; the compile threads of one
``load_kernel_modules`` call build each level's header once and share it. A fresh process with an
empty kernel cache compiles four small modules of two levels (-O2: polyphys.kernels.envs and fk;
-O3: the rigid inertia and bias stages) on two threads: each level's header is started once and built
by one thread (any other thread holding it got a copy), and every module is compiled and loaded.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

PROBE = """
import json
import warp as wp
from polyphys import startup
from polyphys.kernels import envs, fk
from polyphys.plugins.rigid.kernels import bias, inertia
from polyphys.plugins.rigid.types import declare_overloads

declare_overloads([inertia, bias], "32")
fk.declare_overloads("32")
started = []
start = startup._HeaderPool.start
def counting(self, m):
    started.append(self.key(m))
    return start(self, m)
startup._HeaderPool.start = counting
pools = []
init = startup._HeaderPool.__init__
def keep(self, *a):
    init(self, *a)
    pools.append(self)
startup._HeaderPool.__init__ = keep
copied = []
copyfile = startup.shutil.copyfile
def recording(src, dst):
    copied.append(dst[: -len(".part")])
    return copyfile(src, dst)
startup.shutil.copyfile = recording
loads = startup.load_kernel_modules([("test", [envs, fk, inertia, bias])], "cpu", workers=2)
rt = wp._src.context.runtime
# every header file in a compile thread's folder: the one the pool published (built there) or a copy of it
built_twice = [os.path.join(d.name, f) for d in rt._pch_dirs.values() for f in os.listdir(d.name)
               if f.endswith(".pch") and os.path.join(d.name, f) not in copied
               and pools[0].files.get(f) != os.path.join(d.name, f)]
print("PROBE " + json.dumps({"started": [list(k) for k in started], "status": [r.status for r in loads],
                             "headers": sorted(pools[0].files), "built_twice": built_twice,
                             "copies": len(copied)}))
"""


def test_each_precompiled_header_is_built_once_and_shared(tmp_path):
    env = dict(os.environ, WARP_CACHE_PATH=str(tmp_path / "cache"), POLYPHYS_VERBOSITY="quiet")
    p = subprocess.run([sys.executable, "-c", "import os\n" + PROBE], env=env, capture_output=True, text=True,
                       timeout=900)
    assert p.returncode == 0, p.stderr[-3000:]
    res = json.loads(next(ln for ln in p.stdout.splitlines() if ln.startswith("PROBE "))[len("PROBE "):])
    assert res["status"] == ["compiled"] * 4
    levels = sorted(k[0] for k in res["started"])
    assert levels == [2, 3], res["started"]                  # each level's header started by one thread, once
    assert len(res["headers"]) == 2                         # one header file per level
    assert res["built_twice"] == []                         # any other thread holding one got a copy
