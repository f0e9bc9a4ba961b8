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

Code shared by several bodies lives once, in a ``// @part <name>`` section (lambdas over raw pointers,
written after the body's ``typedef ... T``); a body takes it in with a line ``// @use <stem>.<name>``
(the part ``<name>`` of ``kernels/<stem>.cpp``), so a fused body (one Newton iteration loop) and the
single-operation bodies run the same source, operation for operation.
"""

from __future__ import annotations

import functools
import pathlib
import re

_FUNC = re.compile(r"^// @(func|part) (\w+)\s*$", re.M)
_USE = re.compile(r"^// @use (\w+)\.(\w+)\s*$", re.M)


@functools.cache
def _preamble() -> str:
    from ..codes import NATIVE_CODES

    lines = [f"    constexpr int {prefix}_{m.name} = {int(m)};" for prefix, enum in NATIVE_CODES.items() for m in enum]
    # the constants are there for every body; a body that uses none must not warn about them
    names = ", ".join(f"(void){prefix}_{m.name}" for prefix, enum in NATIVE_CODES.items() for m in enum)
    return "\n".join(lines) + f"\n    {names};\n"


@functools.cache
def _sections(path: pathlib.Path) -> tuple:
    """({func name: text}, {part name: text}) of one ``.cpp`` file."""
    parts = _FUNC.split(path.read_text())
    funcs, shared = {}, {}
    for kind, name, text in zip(parts[1::3], parts[2::3], parts[3::3]):
        (funcs if kind == "func" else shared)[name] = text
    return funcs, shared


def _expand(text: str, here: pathlib.Path) -> str:
    """``text`` with each ``// @use <stem>.<name>`` line replaced by that part (parts may use parts)."""

    def part(mt: re.Match) -> str:
        src = here.with_name(mt.group(1) + ".cpp")
        shared = _sections(src)[1]
        if mt.group(2) not in shared:
            raise KeyError(f"{src.name} has no '// @part {mt.group(2)}' section")
        return _expand(shared[mt.group(2)], src)

    return _USE.sub(part, text)


@functools.cache
def bodies(module_file: str) -> dict:
    """{name: body} of the ``// @func`` sections of the ``.cpp`` file next to ``module_file``."""
    path = pathlib.Path(module_file).with_suffix(".cpp")
    return {name: _preamble() + _expand(text, path) for name, text in _sections(path)[0].items()}


def body(module_file: str, name: str) -> str:
    """The body of native function ``name`` of the stage module ``module_file`` (its ``__file__``)."""
    b = bodies(module_file)
    if name not in b:
        raise KeyError(f"{pathlib.Path(module_file).with_suffix('.cpp').name} has no '// @func {name}' section")
    return b[name]
