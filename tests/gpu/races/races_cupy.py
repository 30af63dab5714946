"""CuPy programs for make races-gpu-check (tests/gpu/races/run_races.sh):

    races_cupy.py side raced|fixed   an array set from the host on one non-blocking stream, read
                                     by an elementwise kernel on another without (raced) or after
                                     (fixed) waiting for an event recorded after the copy
    races_cupy.py streams            each of 8 non-blocking streams works on arrays of its own,
                                     then hands its result to the null stream through an event
    races_cupy.py rawkernel raced|fixed
                                     a RawKernel (extern "C", no types in its name) writes an
                                     array on one stream, a copy to pinned host memory on another
                                     reads it without (raced) or after (fixed) an event

Prints "ok" at the end."""
import sys

import cupy
import numpy

N = 1 << 20


def side(raced):
    host = numpy.ones(N, dtype=numpy.float32)
    a = cupy.empty(N, dtype=cupy.float32)
    cupy.cuda.Device().synchronize()
    s1 = cupy.cuda.Stream(non_blocking=True)
    s2 = cupy.cuda.Stream(non_blocking=True)
    a.set(host, stream=s1)  # an asynchronous copy on s1
    if not raced:
        s2.wait_event(s1.record())
    with s2:
        b = a * 2  # an elementwise kernel on s2 reads a
    s2.synchronize()
    s1.synchronize()
    return float(b.sum())


def streams():
    ss = [cupy.cuda.Stream(non_blocking=True) for _ in range(8)]
    outs = []
    for s in ss:
        with s:
            x = cupy.arange(N, dtype=cupy.float32)
            outs.append((x * 3 + 1).sum())
    null = cupy.cuda.Stream.null
    for s in ss:
        null.wait_event(s.record())
    with null:
        total = sum(float(o) for o in outs)
    return total


SCALE = cupy.RawKernel(r"""
extern "C" __global__ void scale_inplace(float *x, int n) {
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] * 2.0f + 1.0f;
}
""", "scale_inplace")


def rawkernel(raced):
    a = cupy.ones(N, dtype=cupy.float32)
    host = cupy.cuda.alloc_pinned_memory(N * 4)
    out = numpy.frombuffer(host, dtype=numpy.float32, count=N)
    cupy.cuda.Device().synchronize()
    s1 = cupy.cuda.Stream(non_blocking=True)
    s2 = cupy.cuda.Stream(non_blocking=True)
    SCALE((N // 256,), (256,), (a, numpy.int32(N)), stream=s1)
    if not raced:
        s2.wait_event(s1.record())
    a.get(stream=s2, out=out)  # an asynchronous copy on s2 reads a
    s2.synchronize()
    s1.synchronize()
    return float(out[0])


def main():
    case = sys.argv[1]
    raced = len(sys.argv) > 2 and sys.argv[2] == "raced"
    if case == "side":
        side(raced)
    elif case == "rawkernel":
        rawkernel(raced)
    else:
        streams()
    print("ok")


main()
