"""JAX under red zones (tests/gpu/redzone/run_redzone.sh): a jitted
computation whose buffers all stay in bounds. JAX's own pool (BFC) would put
every buffer inside one large allocation; with ATLAS_REDZONE set,
libatlastrace sets XLA_PYTHON_CLIENT_ALLOCATOR=platform at load, so every
buffer is its own driver allocation with its own red zone, and a clean run
must report nothing. (No out-of-bounds write could be made in JAX itself on
the H200: dynamic_update_slice clamps its indices, and a Pallas store past
the end of its output is masked; compute-sanitizer memcheck found nothing
either.) Prints "ok" when the program ran to its end."""
import jax
import jax.numpy as jnp

N = 4096


def main():
    x = jnp.arange(N, dtype=jnp.float32)
    f = jax.jit(lambda a: jnp.sin(a) * 2.0 + a.sum())
    for _ in range(3):
        y = f(x)
    y.block_until_ready()
    print("ok: clean", float(y[0]))


if __name__ == "__main__":
    main()
