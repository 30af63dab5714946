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

# Red zones at scale (issue #16): launch mode against 10 / 1,000 / 10,000
# live allocations (native, each ATLAS_REDZONE_CHECK mode, memcheck) and the
# PyTorch training step with only ATLAS_REDZONE=64; markdown tables.
#   make redzone-bench [RZ_BENCH_REPS=5]
#   make redzone-bench-fake     the same programs on the fake driver (no GPU):
#                               checks they run and the tables' format only
RZ_BENCH_REPS ?= 5

$(BUILD)/bench/rz_launch_bench: bench/redzone/rz_launch_bench.c bench/redzone/bench_common.h src/redzone_gpu.h
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O2 -Wall -Wextra -I $(CUDA_INC) -o $@ $< -L$(CUDA_HOME)/lib64/stubs -lcuda -ldl -lpthread

$(BUILD)/bench/fake_kernels.so: bench/redzone/fake_kernels.c tests/fake/fakecuda.h
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -shared -o $@ $<

.PHONY: redzone-bench redzone-bench-fake
redzone-bench: $(BUILD)/libatlastrace.so $(BUILD)/bench/kern_bench.cubin $(BUILD)/bench/rz_launch_bench
	sh bench/redzone/run_redzone_bench.sh $(BUILD) $(RZ_BENCH_REPS)

redzone-bench-fake: $(BUILD)/libatlastrace.so $(FAKE_LIB) $(BUILD)/bench/rz_launch_bench $(BUILD)/bench/fake_kernels.so
	LD_LIBRARY_PATH=$(FAKE_DIR) RZ_BENCH_LAUNCHES=300 sh bench/redzone/run_redzone_bench.sh $(BUILD) 1 $(realpath $(BUILD))/bench/fake_kernels.so

BENCH_TARGETS += redzone-bench

# Red zones on real programs (issue #29): a PyTorch MLP and a Hugging Face GPT-2
# training step, native, the routed pool alone, default and launch mode,
# interleaved, medians of RZ_TORCH_ROUNDS rounds, with the bars.
#   make redzone-torch-bench [RZ_TORCH_ROUNDS=3] [RZ_TORCH_STEPS=200] [RZ_TORCH_WARM=120]
# with RZ_TORCH_SPLIT=1, RZ_TORCH_DECOMP=1 or RZ_TORCH_KEPT=1 in the environment for more rows
# (bench/redzone/run_torch_bench.sh says which)
RZ_TORCH_ROUNDS ?= 3
RZ_TORCH_STEPS ?= 200
RZ_TORCH_WARM ?= 120
.PHONY: redzone-torch-bench
redzone-torch-bench: $(BUILD)/libatlastrace.so
	sh bench/redzone/run_torch_bench.sh $(BUILD) $(RZ_TORCH_ROUNDS) $(RZ_TORCH_STEPS) $(RZ_TORCH_WARM)

BENCH_TARGETS += redzone-torch-bench

# The floor under launch mode: what one extra stream operation after every
# tiny launch costs (the library's check kernel, plainly and as a dependent
# launch, copies of the zones, a memset, a stream write), without the library;
# then launch mode's own cost above that floor, in one process (rz_launch_bench
# ab-floor: the driver's launches each followed by the check kernel queued by
# hand, against the library's launch mode), at 10, 1,000 and 10,000 live
# allocations. Bar (issue #29): at most 1.10x the floor, flat across them. With
# ATLAS_REDZONE_RECHECK=1: the loop's launches repeat, and the floor is a check after each.
#   make redzone-ops-bench [RZ_OPS_BLOCKS=7]
RZ_OPS_BLOCKS ?= 7
$(BUILD)/bench/rz_check_ops: bench/redzone/rz_check_ops.c bench/redzone/bench_common.h src/redzone_gpu.h
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O2 -Wall -Wextra -I $(CUDA_INC) -o $@ $< -L$(CUDA_HOME)/lib64/stubs -lcuda

.PHONY: redzone-ops-bench
redzone-ops-bench: $(BUILD)/libatlastrace.so $(BUILD)/bench/kern_bench.cubin $(BUILD)/bench/rz_check_ops $(BUILD)/bench/rz_launch_bench $(BUILD)/gen/redzone_ptx.c
	$(BUILD)/bench/rz_check_ops $(BUILD)/bench/kern_bench.cubin $(BUILD)/gen/redzone_ptx.c.pdl.ptx 3000 $(RZ_OPS_BLOCKS)
	@for live in 10 1000 10000; do \
	  ATLAS_LOG=/dev/null ATLAS_REDZONE=64 ATLAS_REDZONE_CHECK=launch ATLAS_REDZONE_RECHECK=1 \
	    $(BUILD)/bench/rz_launch_bench \
	    $(BUILD)/bench/kern_bench.cubin $$live 3000 $(RZ_OPS_BLOCKS) ab-floor $(realpath $(BUILD))/libatlastrace.so \
	    $(BUILD)/gen/redzone_ptx.c.pdl.ptx || exit 1; \
	done | awk '{ print } $$1 == "floor" { r[++n] = $$10 } END { if (!n) exit 1; lo = hi = r[1]; \
	  for (i = 2; i <= n; i++) { if (r[i] < lo) lo = r[i]; if (r[i] > hi) hi = r[i] } \
	  printf "bar: launch mode %.3fx..%.3fx its floor from 10 to 10,000 live (at most 1.10x): %s\n", \
	    lo, hi, hi <= 1.10 ? "met" : "NOT met" }'

BENCH_TARGETS += redzone-ops-bench
