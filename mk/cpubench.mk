# CPU-only overhead benchmark (no GPU): ns and instructions per intercepted
# call against the fake driver. Part of make bench.
#
#   make cpu-bench [CPU_BENCH_REPS=7] [CPU_BENCH_N=1000000]
#                  [CPU_BENCH_CONFIGS="trace:ATLAS_TRACE=1;redzone:ATLAS_REDZONE=256"]
#                  [CPU_BENCH_KERNELS="256 10000"] [CPU_BENCH_SYNCS="1 16 256"]
#                  [CPU_BENCH_RELOADS="30 100"]
# CPU_BENCH_CONFIGS adds rows ("name:SETTINGS" separated by ';') to the fixed
# native, idle and stats rows, as features land; the step trace's row is there by
# default, so its cost on the GPT-2-like op mix (the gpt2 loop) shows without a
# GPU (issue #30). CPU_BENCH_KERNELS adds rows
# launch:K, launches over K distinct kernels in turn (the launch path must
# stay flat in the number of kernels). CPU_BENCH_SYNCS adds rows sS:kK:pP, a
# cuCtxSynchronize every S launches over each K kernels of 0 and 8
# parameters, and a row of syncs alone (a good sync must not make launches
# dearer: the +launch column is the launch's share). CPU_BENCH_RELOADS adds
# rows reload:R, launches after R reloads of a 256-kernel module (a launch
# must cost the same after any number of reloads).

CPU_BENCH_REPS    ?= 7
CPU_BENCH_N       ?= 1000000
CPU_BENCH_CONFIGS ?= trace:ATLAS_TRACE=1
CPU_BENCH_KERNELS ?= 256 10000
CPU_BENCH_SYNCS   ?= 1 16 256
CPU_BENCH_RELOADS ?= 30 100
# more loops of cpu_bench by name: adamw, PyTorch's optimizer step (a 3.5 KiB by-value
# struct whose scalars change every step) among elementwise launches (issue #43)
CPU_BENCH_MORE    ?= adamw adamw:pool cupy

$(BUILD)/bench/cpu_bench: bench/cpu/cpu_bench.c $(FAKE_DIR)/libcuda.so
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< -L$(FAKE_DIR) -lcuda

.PHONY: cpu-bench
cpu-bench: $(BUILD)/libatlastrace.so $(FAKE_LIB) $(BUILD)/bench/cpu_bench
	CPU_BENCH_MORE="$(CPU_BENCH_MORE)" sh bench/cpu/run_cpu_bench.sh $(BUILD) $(CPU_BENCH_REPS) $(CPU_BENCH_N) "$(CPU_BENCH_CONFIGS)" \
	  "$(CPU_BENCH_KERNELS)" "$(CPU_BENCH_SYNCS)" "$(CPU_BENCH_RELOADS)"

BENCH_TARGETS += cpu-bench

# Module reload loops (issue #28): CPU time, peak memory and instructions per
# cycle after 5,000, 20,000 and 40,000 cycles, native and idle:
#   make reload-bench [RELOAD_BENCH_COUNTS="5000 20000 40000"]
RELOAD_BENCH_COUNTS ?= 5000 20000 40000

.PHONY: reload-bench
reload-bench: $(BUILD)/libatlastrace.so $(FAKE_LIB) $(BUILD)/bench/cpu_bench
	sh bench/cpu/run_reload_bench.sh $(BUILD) "$(RELOAD_BENCH_COUNTS)"

BENCH_TARGETS += reload-bench

# Allocation + free pair with 10 to 1M live allocations (fake driver):
#   make alloc-bench [ALLOC_BENCH_SIZES="10 1000 100000 1000000"] [ALLOC_BENCH_PAIRS=20000]
ALLOC_BENCH_SIZES ?= 10 1000 100000 1000000
ALLOC_BENCH_PAIRS ?= 20000

$(BUILD)/bench/alloc_bench: bench/cpu/alloc_bench.c $(FAKE_DIR)/libcuda.so
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< -L$(FAKE_DIR) -lcuda

.PHONY: alloc-bench
alloc-bench: $(BUILD)/libatlastrace.so $(FAKE_LIB) $(BUILD)/bench/alloc_bench
	sh bench/cpu/run_alloc_bench.sh $(BUILD) "$(ALLOC_BENCH_SIZES)" $(ALLOC_BENCH_PAIRS)

BENCH_TARGETS += alloc-bench

# The same rounds on the real driver (a GPU): the driver's own pair and what
# the preload adds, at each size.
#   make alloc-bench-gpu [ALLOC_BENCH_SIZES=...] [ALLOC_BENCH_PAIRS=...]
$(BUILD)/bench/alloc_bench_gpu: bench/cpu/alloc_bench.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< -L$(CUDA_HOME)/lib64/stubs -lcuda

.PHONY: alloc-bench-gpu
alloc-bench-gpu: $(BUILD)/libatlastrace.so $(BUILD)/bench/alloc_bench_gpu
	ALLOC_BENCH_GPU=1 sh bench/cpu/run_alloc_bench.sh $(BUILD) "$(ALLOC_BENCH_SIZES)" $(ALLOC_BENCH_PAIRS)

BENCH_TARGETS += alloc-bench-gpu
