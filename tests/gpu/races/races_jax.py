"""A correct JAX program for make races-gpu-check: a jitted training step whose inputs are
transferred each step (XLA orders its own compute and transfer streams with events).
Prints "ok" at the end."""
import jax
import jax.numpy as jnp
import numpy


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
print("ok")
