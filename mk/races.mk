# Races between streams (src/races*.c, docs/races.md):
#   make races-check      the seeded cases against the fake driver (part of make check)
#   make races-bench      CPU cost per launch beside the step trace's (fake driver)
#   make races-gpu-check  on a GPU: CUDA C, PyTorch and CuPy races named, correct
#                         multi-stream programs silent, the cost on a GPT-2-like step

# a stand-in runtime library, named as CUDA's are (its frames are plumbing to the reports)
$(BUILD)/tests/libcudart_races.so: tests/targets/races_cudart.c $(FAKE_DIR)/libcuda.so
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -shared -o $@ $< -L$(FAKE_DIR) -lcuda

# a library whose constructor calls the program (races_prog loader), loaded with dlopen
$(BUILD)/tests/libraces_ctor.so: tests/targets/races_ctor.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -shared -o $@ $<

$(BUILD)/tests/races_prog: tests/targets/races_prog.c $(BUILD)/tests/libcudart_races.so \
                           $(BUILD)/tests/libraces_ctor.so $(FAKE_DIR)/libcuda.so
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -rdynamic -o $@ $< -L$(BUILD)/tests -lcudart_races \
	  -Wl,-rpath,'$$ORIGIN' -L$(FAKE_DIR) -lcuda -ldl -lpthread

# Built by make: docs/races.md's example runs it as written; golden reports of races too
# (tests/golden/cases).
ALL_TARGETS += $(BUILD)/tests/races_prog

# more call sites than the detector keeps (issue #48): 17,002 cuLaunchKernel calls, each its
# own return address (-O0: no two cases merged)
$(BUILD)/tests/races_sites_gen.c:
	@mkdir -p $(dir $@)
	@{ echo '#include <cuda.h>'; \
	   echo 'void launch_at(int i, CUfunction f, CUstream s, void **args);'; \
	   echo 'void launch_at(int i, CUfunction f, CUstream s, void **args)'; \
	   echo '{'; echo '    switch (i) {'; \
	   i=0; while [ $$i -lt 17002 ]; do \
	     echo "    case $$i: cuLaunchKernel(f, 1, 1, 1, 32, 1, 1, 0, s, args, 0); break;"; \
	     i=$$((i + 1)); done; \
	   echo '    }'; echo '}'; } >$@.tmp && mv $@.tmp $@
$(BUILD)/tests/races_sites: tests/targets/races_sites.c $(BUILD)/tests/races_sites_gen.c \
                            $(FAKE_DIR)/libcuda.so
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -O0 -o $@ $< $(BUILD)/tests/races_sites_gen.c -L$(FAKE_DIR) -lcuda
golden-check golden-update: $(BUILD)/tests/races_prog

$(BUILD)/tests/test_races: tests/integration/test_races.c tests/integration/run.c | check-deps

$(BUILD)/tests/test_races_unit: tests/unit/test_races.c $(BUILD)/libatlas_engine.a | check-deps

.PHONY: races-check
races-check: check-deps $(BUILD)/libatlastrace.so $(FAKE_LIB) $(BUILD)/tests/races_prog \
             $(BUILD)/tests/races_sites \
             $(BUILD)/tests/test_races_unit $(BUILD)/tests/test_races
	$(BUILD)/tests/test_races_unit
	$(BUILD)/tests/test_races

CHECK_TARGETS += races-check

# The cost of a launch whose pointers are resolved and checked, next to the
# step trace's (which records the same pointers), as cpu-bench measures:
#   make races-bench [CPU_BENCH_REPS=7] [CPU_BENCH_N=1000000]
$(BUILD)/bench/races_bench: bench/races/races_bench.c $(FAKE_DIR)/libcuda.so
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< -L$(FAKE_DIR) -lcuda

.PHONY: races-bench
races-bench: $(BUILD)/libatlastrace.so $(FAKE_LIB) $(BUILD)/bench/races_bench
	CPU_BENCH_BIN=$(BUILD)/bench/races_bench CPU_BENCH_LOOPS="one two untyped layers" \
	  sh bench/cpu/run_cpu_bench.sh $(BUILD) $(CPU_BENCH_REPS) $(CPU_BENCH_N) \
	  "trace:ATLAS_TRACE=1;races:ATLAS_RACES=1" ""

BENCH_TARGETS += races-bench

# ---- real GPU ------------------------------------------------------------------------------------
$(GPU_DIR)/races_cases: tests/gpu/races/races_cases.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(GPU_ARCH) -O2 -o $@ $< -lpthread

# the same program with per-thread default streams (nvcc --default-stream per-thread)
$(GPU_DIR)/races_cases_ptds: tests/gpu/races/races_cases.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(GPU_ARCH) -O2 --default-stream per-thread -DRACES_PTDS -o $@ $< -lpthread

.PHONY: races-gpu-check
races-gpu-check: $(BUILD)/libatlastrace.so $(GPU_DIR)/races_cases $(GPU_DIR)/races_cases_ptds
	sh tests/gpu/races/run_races.sh $(BUILD)

GPU_TARGETS += races-gpu-check

# The race tests under ASan+UBSan with leak checking, in a tree of their own (a
# minute or two plus the build, so not part of make check): make races-asan-check
RACES_ASAN_BUILD := $(BUILD)/asan-races
.PHONY: races-asan-check
races-asan-check: check-deps
	@$(MAKE) --no-print-directory BUILD=$(RACES_ASAN_BUILD) \
	  CFLAGS="-O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined" \
	  LDLIBS_CORE="-fsanitize=address,undefined $(LDLIBS_CORE)" \
	  $(RACES_ASAN_BUILD)/libatlastrace.so $(RACES_ASAN_BUILD)/fake/libcuda.so.1 \
	  $(RACES_ASAN_BUILD)/tests/races_prog $(RACES_ASAN_BUILD)/tests/races_sites \
	  $(RACES_ASAN_BUILD)/tests/test_races_unit \
	  $(RACES_ASAN_BUILD)/tests/test_races
	ATL_TEST_PRELOAD_EXTRA="$$($(CC) -print-file-name=libasan.so)" \
	  ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:exitcode=66 \
	  UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:exitcode=66 \
	  sh -c '$(RACES_ASAN_BUILD)/tests/test_races_unit && $(RACES_ASAN_BUILD)/tests/test_races'
