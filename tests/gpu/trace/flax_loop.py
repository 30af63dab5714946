"""A Flax/Optax training loop under jax.jit (tests/gpu/trace/run_programs.sh).

    flax_loop.py [STEPS]

A 3-layer MLP (flax.linen) trained with optax.adam on random data for STEPS
steps (default 20), each ended by the host reading the loss (a sync). Traced
with steps at syncs, XLA's autotuning and set-up syncs, each after work of
its own, come before the loop: issue #30 counted 3,096 report lines for this
loop when each step was compared with the one before; comparing a step with
the last one of its shape must bring it under 200. Prints "ok" at the end."""
import sys

import jax
import jax.numpy as jnp
import flax.linen as nn
import optax


class MLP(nn.Module):
    @nn.compact
    def __call__(self, x):
        x = nn.relu(nn.Dense(256)(x))
        x = nn.relu(nn.Dense(256)(x))
        return nn.Dense(10)(x)


def main(steps):
    key = jax.random.PRNGKey(0)
    kx, ky, kp = jax.random.split(key, 3)
    x = jax.random.normal(kx, (128, 64))
    y = jax.random.randint(ky, (128,), 0, 10)
    model = MLP()
    params = model.init(kp, x)
    opt = optax.adam(1e-3)
    state = opt.init(params)

    @jax.jit
    def train_step(params, state, x, y):
        def loss_fn(p):
            logits = model.apply(p, x)
            return optax.softmax_cross_entropy_with_integer_labels(logits, y).mean()

        loss, grads = jax.value_and_grad(loss_fn)(params)
        updates, state = opt.update(grads, state, params)
        return optax.apply_updates(params, updates), state, loss

    losses = []
    for _ in range(steps):
        params, state, loss = train_step(params, state, x, y)
        losses.append(float(loss))  # the host reads the loss: a sync
    print("losses: first %.4f last %.4f" % (losses[0], losses[-1]))
    print("ok" if losses[-1] < losses[0] else "FAIL: the loss did not go down")


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
