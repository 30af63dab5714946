/*
 * A stand-in for the real-program matrix's programs (tests/gpu/matrix/), for
 * tests/harness/test_matrix.sh: a step sleeps STANDIN_MS milliseconds times STANDIN_SLOW (the
 * stand-in atlas-trace sets it per mode), timed by timed.h as the matrix's CUDA programs are,
 * turns and all. STANDIN_FAIL=1: exits 1 after its warm-up, without a figure.
 */
#include "../gpu/matrix/timed.h"

static double step_ms = 2.0;

static void step(void)
{
    matrix_sleep_ms(step_ms);
}

int main(void)
{
    matrix_gpu_lock();
    const char *ms = getenv("STANDIN_MS"), *slow = getenv("STANDIN_SLOW");
    step_ms = (ms ? atof(ms) : 2.0) * (slow ? atof(slow) : 1.0);
    if (getenv("STANDIN_FAIL") && atoi(getenv("STANDIN_FAIL")))
        return 1;
    printf("model stand-in: a step sleeps %.3f ms\n", step_ms);
    matrix_timed(step, 2, 10);
    return 0;
}
