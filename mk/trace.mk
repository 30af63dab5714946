# Step traces and step diffs (src/trace.c, src/tracediff.c; docs/trace.md):
# the offline diff tool, its tests, the fake-driver tests and the GPU suite.

# tools/atlas-diff: the live step diff, offline; one diff module for both.
# Beside atlas-trace in the build tree, as in an installed bin/.
# tools/diff-ranks.c: its --ranks mode (N ranks of one job, the odd one out).
$(BUILD)/atlas-diff: $(ATLAS_DIFF_DEPS) $(BUILD)/libatlas_engine.a VERSION
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -DATLAS_VERSION='"$(shell cat VERSION 2>/dev/null || echo unknown)"' \
		-o $@ $(ATLAS_DIFF_SRCS) $(BUILD)/libatlas_engine.a $(LDLIBS_CORE)

$(BUILD)/tests/trace_steps: tests/targets/trace_steps.c include/atlas/trace.h $(FAKE_DIR)/libcuda.so
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< -L$(FAKE_DIR) -lcuda -ldl -lpthread

# a caching allocator's segment maker under PyTorch's file name and under another (trace_steps
# segments)
$(BUILD)/tests/c10/libc10_cuda.so $(BUILD)/tests/libsegs.so: tests/targets/seg_lib.c $(FAKE_DIR)/libcuda.so
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -fno-optimize-sibling-calls -shared -Wl,-soname,$(notdir $@) -o $@ $< \
	  -L$(FAKE_DIR) -lcuda

$(BUILD)/tests/test_trace_unit: tests/unit/test_trace.c $(BUILD)/libatlas_engine.a | check-deps

$(BUILD)/tests/test_trace: tests/integration/test_trace.c tests/integration/run.c | check-deps

.PHONY: trace-check
trace-check: check-deps $(BUILD)/libatlastrace.so $(FAKE_LIB) $(BUILD)/tests/trace_steps $(BUILD)/tests/redzone_prog \
             $(BUILD)/tests/c10/libc10_cuda.so $(BUILD)/tests/libsegs.so \
             $(BUILD)/atlas-diff $(BUILD)/tests/test_trace_unit $(BUILD)/tests/test_trace
	$(BUILD)/tests/test_trace_unit
	$(BUILD)/tests/test_trace
	@# the GPU suite's trace parser (check_train.py) on files of this build
	@if command -v python3 >/dev/null; then python3 -B tests/integration/test_check_train.py $(BUILD); \
	  else echo "check_train: python3 not found, not checked"; fi

ALL_TARGETS   += $(BUILD)/atlas-diff
INSTALL_BINS  += $(BUILD)/atlas-diff
CHECK_TARGETS += trace-check

# The real-GPU suite (H200): make trace-gpu-check
$(GPU_DIR)/trace_loop: tests/gpu/trace/trace_loop.cu include/atlas/trace.h
	@mkdir -p $(dir $@)
	$(NVCC) $(GPU_ARCH) -O2 -I include -o $@ $< -ldl

$(GPU_DIR)/trace_threads: tests/gpu/trace/trace_threads.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(GPU_ARCH) -O2 -o $@ $< -lpthread

$(GPU_DIR)/trace_graph: tests/gpu/trace/trace_graph.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(GPU_ARCH) -O2 -o $@ $<

$(GPU_DIR)/trace_capture_eager: tests/gpu/trace/trace_capture_eager.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(GPU_ARCH) -O2 -o $@ $<

.PHONY: trace-gpu-check
trace-gpu-check: $(BUILD)/libatlastrace.so $(BUILD)/atlas-diff $(GPU_DIR)/trace_loop \
                 $(GPU_DIR)/trace_threads $(GPU_DIR)/trace_graph $(GPU_DIR)/trace_capture_eager
	sh tests/gpu/trace/run_trace.sh $(BUILD)

GPU_TARGETS += trace-gpu-check

# Issue #30's programs on the H200, in one command: a Flax/Optax jax.jit loop,
# DDP over NCCL with one rank, eager against captured (tests/gpu/trace/run_programs.sh,
# also part of trace-gpu-check), and the GPT-2 step's cost traced against native
# (bench/trace/run_gpt2_bench.sh, also part of make bench):
#   make trace-programs-gpu-check [GPT2_BENCH_RUNS=5]
GPT2_BENCH_RUNS ?= 5
.PHONY: trace-programs-gpu-check trace-gpt2-bench
trace-programs-gpu-check: $(BUILD)/libatlastrace.so $(GPU_DIR)/trace_capture_eager
	@st=0; sh tests/gpu/trace/run_programs.sh $(BUILD) || st=1; \
	  sh bench/trace/run_gpt2_bench.sh $(BUILD) $(GPT2_BENCH_RUNS) || st=1; exit $$st

trace-gpt2-bench: $(BUILD)/libatlastrace.so
	sh bench/trace/run_gpt2_bench.sh $(BUILD) $(GPT2_BENCH_RUNS)

BENCH_TARGETS += trace-gpt2-bench

# Recording overhead on an 8-parameter launch loop: make trace-bench
.PHONY: trace-bench
trace-bench: $(BUILD)/libatlastrace.so $(BUILD)/bench/kern_bench.cubin $(BUILD)/bench/bench_launch
	sh bench/trace/run_trace_bench.sh $(BUILD) $(BENCH_REPS)

BENCH_TARGETS += trace-bench

# The trace tests under ASan+UBSan with leak checking, in a tree of their own
# (about 20 s plus the build, so not part of make check): make trace-asan-check
TRACE_ASAN_BUILD := $(BUILD)/asan-trace
.PHONY: trace-asan-check
trace-asan-check: check-deps
	@$(MAKE) --no-print-directory BUILD=$(TRACE_ASAN_BUILD) \
	  CFLAGS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" \
	  LDLIBS_CORE="-fsanitize=address,undefined $(LDLIBS_CORE)" \
	  $(TRACE_ASAN_BUILD)/libatlastrace.so $(TRACE_ASAN_BUILD)/fake/libcuda.so.1 \
	  $(TRACE_ASAN_BUILD)/tests/trace_steps $(TRACE_ASAN_BUILD)/tests/redzone_prog \
	  $(TRACE_ASAN_BUILD)/atlas-diff \
	  $(TRACE_ASAN_BUILD)/tests/test_trace_unit $(TRACE_ASAN_BUILD)/tests/test_trace
	ATL_TEST_PRELOAD_EXTRA="$$($(CC) -print-file-name=libasan.so)" \
	  ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:exitcode=66 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:exitcode=66 \
	  sh -c '$(TRACE_ASAN_BUILD)/tests/test_trace_unit && $(TRACE_ASAN_BUILD)/tests/test_trace'

# The trace at scale (fake driver): a 1M-op step's end, atlas-diff on two 1M-op files, memory per
# op, and T threads against untraced in one process: make trace-scale-bench [TRACE_SCALE_N=1000000]
TRACE_SCALE_N ?= 1000000
$(BUILD)/bench/trace_scale: bench/trace/trace_scale.c $(FAKE_DIR)/libcuda.so
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< -L$(FAKE_DIR) -lcuda -ldl -lpthread

.PHONY: trace-scale-bench
trace-scale-bench: $(BUILD)/libatlastrace.so $(FAKE_LIB) $(BUILD)/bench/trace_scale $(BUILD)/atlas-diff \
                   $(BUILD)/bench/cpu_bench
	sh bench/trace/run_scale_bench.sh $(BUILD) $(TRACE_SCALE_N)

BENCH_TARGETS += trace-scale-bench

# A caching allocator's steady state traced (issue #43; bench/trace/trace_churn.c): pointers
# that move to other live allocations every step, allocated deep in a library of N exported
# symbols. Instructions a step (callgrind) natively, traced, traced with ATLAS_STACK_DEPTH=0
# and with ATLAS_SYMBOLS=0, at each N, and the bar: traced within 1.2x of depth 0.
#   make trace-churn-bench [CHURN_SYMS="10000 100000"]
# make check runs trace-churn-check: the same at 10,000 symbols, fewer steps, a bound of 2x.
CHURN_SYMS ?= 10000 100000
$(BUILD)/bench/churn%/syms.S: bench/trace/gen_syms.sh
	@mkdir -p $(dir $@)
	sh $< $* >$@

$(BUILD)/bench/churn%/libchurn.so: bench/trace/churn_lib.c $(BUILD)/bench/churn%/syms.S $(FAKE_DIR)/libcuda.so
	$(CC) $(ALL_CFLAGS) -shared -fvisibility=hidden -Wl,-soname,libchurn.so -o $@ \
	  bench/trace/churn_lib.c $(BUILD)/bench/churn$*/syms.S -L$(FAKE_DIR) -lcuda

# linked against the smallest library; the runner picks one with LD_LIBRARY_PATH
$(BUILD)/bench/trace_churn: bench/trace/trace_churn.c $(BUILD)/bench/churn10000/libchurn.so
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< -L$(BUILD)/bench/churn10000 -lchurn -L$(FAKE_DIR) -lcuda

.PRECIOUS: $(BUILD)/bench/churn%/syms.S $(BUILD)/bench/churn%/libchurn.so

.PHONY: trace-churn-bench trace-churn-check
trace-churn-bench: $(BUILD)/libatlastrace.so $(FAKE_LIB) $(BUILD)/bench/trace_churn \
                   $(foreach n,$(CHURN_SYMS),$(BUILD)/bench/churn$(n)/libchurn.so)
	sh bench/trace/run_churn_bench.sh $(BUILD) "$(CHURN_SYMS)"

trace-churn-check: $(BUILD)/libatlastrace.so $(FAKE_LIB) $(BUILD)/bench/trace_churn \
                   $(BUILD)/bench/churn10000/libchurn.so
	CHURN_CHECK=1 sh bench/trace/run_churn_bench.sh $(BUILD) 10000

BENCH_TARGETS += trace-churn-bench
CHECK_TARGETS += trace-churn-check
