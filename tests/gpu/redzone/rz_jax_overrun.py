"""JAX under red zones (tests/gpu/redzone/run_redzone.sh).

JAX's own pool (BFC) would put every buffer inside one large allocation; with
ATLAS_REDZONE set, libatlastrace sets XLA_PYTHON_CLIENT_ALLOCATOR=cuda_async at
load, so every buffer is its own stream-ordered driver allocation with its own
red zone (the platform allocator of JAX 0.11 maps each buffer into a 2 MiB
cuMemCreate handle, where no red zone can sit).

  rz_jax_overrun.py            a jitted computation whose buffers all stay in
                               bounds: nothing may be reported
  rz_jax_overrun.py ffi LIB    a custom call (XLA FFI, LIB built from
                               rz_jax_ffi.cu) whose kernel writes one float
                               past its 4096-float output

(JAX itself could not be made to write out of bounds on the H200:
dynamic_update_slice clamps its indices and a Pallas store past the end of
its output is masked; hence the custom call.) Prints "ok" when the program
ran to its end."""
import ctypes
import sys

import jax
import jax.numpy as jnp

N = 4096


def clean():
    x = jnp.arange(N, dtype=jnp.float32)
    f = jax.jit(lambda a: jnp.sin(a) * 2.0 + a.sum())
    for _ in range(3):
        y = f(x)
    y.block_until_ready()
    print("ok: clean", float(y[0]))


def ffi(lib_path):
    lib = ctypes.cdll.LoadLibrary(lib_path)
    jax.ffi.register_ffi_target("atlas_past_end", jax.ffi.pycapsule(lib.PastEnd),
                                platform="CUDA")
    x = jnp.arange(N, dtype=jnp.float32)
    call = jax.ffi.ffi_call("atlas_past_end", jax.ShapeDtypeStruct(x.shape, x.dtype))
    y = jax.jit(call)(x)
    y.block_until_ready()
    print("output at 0x%x, input at 0x%x" % (y.unsafe_buffer_pointer(), x.unsafe_buffer_pointer()))
    print("ok: ffi", float(y[1]))
    del y


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "ffi":
        ffi(sys.argv[2])
    else:
        clean()
