# Overhead benchmarks (GPU): make bench. Ratios against the native loop.

$(BUILD)/bench/kern_bench.cubin: bench/core/kern_bench.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(GPU_ARCH) -cubin -o $@ $<

$(BUILD)/bench/bench_launch: bench/core/bench_launch.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O2 -Wall -Wextra -I $(CUDA_INC) -o $@ $< -L$(CUDA_HOME)/lib64/stubs -lcuda -ldl -lpthread

.PHONY: core-bench
core-bench: $(BUILD)/libatlastrace.so $(BUILD)/bench/kern_bench.cubin $(BUILD)/bench/bench_launch
	sh bench/core/run_bench.sh $(BUILD) $(BENCH_REPS)

BENCH_REPS ?= 7
BENCH_TARGETS += core-bench
