"""Loader of the native C++ stage bodies (``kernels/<stage>.cpp`` next to ``kernels/<stage>.py``).

Why native code at all (docs/rigid.md, "Performance"): Warp's CPU array indexing ``a[env, i]``
recomputes ``data + env·stride₀ + i·stride₁`` with a negative-index fix-up on every access; the hot
per-env loops of the smooth dynamics and of the constraint solver walk raw row pointers instead.
Measured: the same LᵀDL factorisation written in Warp takes 3.3× the CPU time of the C++ body
(4.4 vs 1.35 µs per env-step, humanoid, 1024 envs, results bit-identical), so these loops stay C++;
everything else is Warp.

A ``.cpp`` file holds the bodies of its module's ``wp.func_native`` functions, each introduced by a
line ``// @func <name>``. The functions are declared in the Python module with generic (``Any``)
parameters, so one body serves float32 and float64: it derives its scalar type from an argument,
``typedef decltype(+*qpos.data) T;``. Bodies see the codes of types.py as ``constexpr int``
constants named ``<PREFIX>_<MEMBER>`` (``JOINT_FREE``, ``EFC_CONTACT_ELLIPTIC``, ...), generated
here from the IntEnums (their only definition). Each body is plain C++ over Warp's vector types
(``wp::vec_t``, ``wp::quat_t``, ``wp::mat_t``); it compiles for CPU and CUDA.
"""

from __future__ import annotations

import functools
import pathlib
import re

_FUNC = re.compile(r"^// @func (\w+)\s*$", re.M)


@functools.cache
def _preamble() -> str:
    from ..codes import NATIVE_CODES

    lines = [f"    constexpr int {prefix}_{m.name} = {int(m)};" for prefix, enum in NATIVE_CODES.items() for m in enum]
    # the constants are there for every body; a body that uses none must not warn about them
    names = ", ".join(f"(void){prefix}_{m.name}" for prefix, enum in NATIVE_CODES.items() for m in enum)
    return "\n".join(lines) + f"\n    {names};\n"


@functools.cache
def bodies(module_file: str) -> dict:
    """{name: body} of the ``// @func`` sections of the ``.cpp`` file next to ``module_file``."""
    path = pathlib.Path(module_file).with_suffix(".cpp")
    text = path.read_text()
    parts = _FUNC.split(text)
    out = {}
    for name, body in zip(parts[1::2], parts[2::2]):
        out[name] = _preamble() + body
    return out


def body(module_file: str, name: str) -> str:
    """The body of native function ``name`` of the stage module ``module_file`` (its ``__file__``)."""
    b = bodies(module_file)
    if name not in b:
        raise KeyError(f"{pathlib.Path(module_file).with_suffix('.cpp').name} has no '// @func {name}' section")
    return b[name]
