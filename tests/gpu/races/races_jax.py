"""JAX for make races-gpu-check.

  races_jax.py                  a correct program: a jitted training step whose inputs are
                                transferred each step (XLA orders its own compute and transfer
                                streams with events)
  races_jax.py ffi LIB raced    a custom call (XLA FFI, LIB built from races_jax_ffi.cu) whose
                                kernel writes its output on a side stream, read by XLA's next
                                kernel on XLA's stream with nothing between: a race
  races_jax.py ffi LIB fixed    the same, XLA's stream made to wait for the side stream

Prints "ok" at the end."""
import ctypes
import sys

import jax
import jax.numpy as jnp
import numpy


def train():
    @jax.jit
    def step(w, x):
        def loss(w):
            return jnp.sum(jnp.tanh(x @ w) ** 2)

        return w - 0.01 * jax.grad(loss)(w)

    w = jnp.ones((256, 256), dtype=jnp.float32) * 0.01
    for i in range(20):
        x = jax.device_put(numpy.full((64, 256), i % 7, dtype=numpy.float32))
        w = step(w, x)
    print(float(jnp.sum(w)))


def ffi(lib_path, how):
    lib = ctypes.cdll.LoadLibrary(lib_path)
    sym = lib.SideWrite if how == "raced" else lib.SideWriteJoined
    jax.ffi.register_ffi_target("atlas_side_write", jax.ffi.pycapsule(sym), platform="CUDA")
    n = 1 << 16
    call = jax.ffi.ffi_call("atlas_side_write", jax.ShapeDtypeStruct((n,), jnp.float32))
    # x is made by XLA, the custom call writes y on its side stream, XLA's fusion reads y
    f = jax.jit(lambda a: call(jnp.sin(a) + 1.0) * 2.0 + 1.0)
    a = jnp.arange(n, dtype=jnp.float32) / n
    for _ in range(3):
        z = f(a)
    z.block_until_ready()
    want = (numpy.sin(numpy.arange(n, dtype=numpy.float32) / n) + 1.0) * 6.0 + 1.0
    print("max error", float(numpy.max(numpy.abs(numpy.asarray(z) - want))))


if __name__ == "__main__":
    if len(sys.argv) > 3 and sys.argv[1] == "ffi":
        ffi(sys.argv[2], sys.argv[3])
    else:
        train()
    print("ok")
