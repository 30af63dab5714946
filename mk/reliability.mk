# Reliability: the stress, fork, exit-path, bad-setting and log-safety tests
# (tests/reliability/), the engine and integration tests again under
# AddressSanitizer + UndefinedBehaviorSanitizer, the stress test under
# ThreadSanitizer, and a valgrind (memcheck) run of a target under the preload.
#
#   make reliability-check   all of it (part of make check)
#
# Sizes, so CI runs a bounded version and a long soak is one variable away:
#   STRESS_THREADS=16 STRESS_ITERS=100000   plain build
#   ASAN_STRESS_ITERS=100000                under ASan+UBSan (leak check on)
#   TSAN_STRESS_ITERS=100000                under TSan (about 45 s on 2 cores)
#   STRESS_ENV="ATLAS_TRACE=1 ATLAS_REDZONE=256"  extra settings for every
#                                           stress run (features as they land)
#   REL_FILE_VARS="ATLAS_LOG ATLAS_TRACE_FILE:ATLAS_TRACE=1"  settings that
#                                           name an output file, each with what
#                                           must be set for it to be written:
#                                           symlink, FIFO, another user's file
#                                           and a too-long name refused, created
#                                           0600, a write error said once
# Each step prints how long it took.

STRESS_THREADS    ?= 16
STRESS_ITERS      ?= 100000
ASAN_STRESS_ITERS ?= 100000
TSAN_STRESS_ITERS ?= 100000
STRESS_ENV        ?= ATLAS_REDZONE=256 ATLAS_TRACE=1
REL_FILE_VARS     ?= ATLAS_LOG ATLAS_TRACE_FILE:ATLAS_TRACE=1 ATLAS_CHROME_TRACE

ASAN_BUILD  := $(BUILD)/asan
TSAN_BUILD  := $(BUILD)/tsan
ASAN_CFLAGS := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
TSAN_CFLAGS := -O1 -g -fsanitize=thread -fno-omit-frame-pointer
# A sanitized preload library needs its runtime ahead of it in LD_PRELOAD.
ASAN_RT := $(shell $(CC) -print-file-name=libasan.so)
TSAN_RT := $(shell $(CC) -print-file-name=libtsan.so)

REL_FAKE_LINK := -L$(FAKE_DIR) -lcuda -ldl -lpthread
REL_BINS := $(BUILD)/tests/rel_stress $(BUILD)/tests/rel_fork $(BUILD)/tests/rel_exit \
            $(BUILD)/tests/rel_harm $(BUILD)/tests/rel_cfgvars $(BUILD)/tests/test_reliability \
            $(BUILD)/tests/rel_output $(BUILD)/tests/test_output $(BUILD)/tests/ro_environ.so

# A C++ program: an exception thrown through a hooked call (issue #48). Built where there is
# a C++ compiler; test_reliability says when it was not.
ifneq ($(shell command -v $(CXX) 2>/dev/null),)
REL_BINS += $(BUILD)/tests/rel_throw
endif
$(BUILD)/tests/rel_throw: tests/reliability/rel_throw.cc tests/fake/fakecuda.h $(FAKE_DIR)/libcuda.so
	@mkdir -p $(dir $@)
	$(CXX) -std=c++17 $(CFLAGS) -Wall -Wextra -Werror -I $(CUDA_INC) -o $@ $< $(REL_FAKE_LINK)

$(BUILD)/tests/rel_stress $(BUILD)/tests/rel_fork: $(BUILD)/tests/rel_%: tests/reliability/rel_%.c tests/targets/workload.c $(FAKE_DIR)/libcuda.so
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< tests/targets/workload.c $(REL_FAKE_LINK)

$(BUILD)/tests/rel_exit $(BUILD)/tests/rel_harm: $(BUILD)/tests/rel_%: tests/reliability/rel_%.c $(FAKE_DIR)/libcuda.so
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(REL_FAKE_LINK)

# A preloaded library that leaves `environ` read-only (issue #28).
$(BUILD)/tests/ro_environ.so: tests/reliability/ro_environ.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -shared -o $@ $<

$(BUILD)/tests/rel_cfgvars: tests/reliability/rel_cfgvars.c $(BUILD)/libatlas_engine.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(BUILD)/libatlas_engine.a $(LDLIBS_CORE)

$(BUILD)/tests/rel_output: tests/reliability/rel_output.c $(FAKE_DIR)/libcuda.so
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(REL_FAKE_LINK)

# test_reliability and test_output: the same harness, the same file settings;
# test_output reads traces with the library's own reader
$(BUILD)/tests/test_reliability: tests/reliability/test_reliability.c tests/reliability/file_vars.c tests/integration/run.c | check-deps
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(TEST_DEFS) $(CHECK_CFLAGS) -o $@ $^ $(CHECK_LIBS)

$(BUILD)/tests/test_output: tests/reliability/test_output.c tests/reliability/file_vars.c tests/integration/run.c $(BUILD)/libatlas_engine.a | check-deps
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(TEST_DEFS) $(CHECK_CFLAGS) -o $@ $^ $(CHECK_LIBS) $(LDLIBS_CORE)

# Everything one test run needs, in whichever BUILD.
.PHONY: rel-build
# (tests.mk is read after this file: name its targets, not its variables.)
rel-build: $(BUILD)/libatlastrace.so $(FAKE_LIB) $(REL_BINS) $(BUILD)/tests/tp_linked \
           $(BUILD)/tests/tp_linked_ptds $(BUILD)/tests/tp_dlsym $(BUILD)/tests/tp_gpa $(BUILD)/tests/tp_threads \
           $(BUILD)/tests/tp_every \
           $(BUILD)/tests/test_config $(BUILD)/tests/test_preload

# The sanitized trees are separate builds of the same sources (the library's
# link line takes no CFLAGS, so the runtime comes in through LDLIBS_CORE).
.PHONY: rel-asan-build rel-tsan-build
rel-asan-build: check-deps
	@$(MAKE) --no-print-directory BUILD=$(ASAN_BUILD) CFLAGS="$(ASAN_CFLAGS)" \
	  LDLIBS_CORE="-fsanitize=address,undefined $(LDLIBS_CORE)" rel-build
rel-tsan-build: check-deps
	@$(MAKE) --no-print-directory BUILD=$(TSAN_BUILD) CFLAGS="$(TSAN_CFLAGS)" \
	  LDLIBS_CORE="-fsanitize=thread $(LDLIBS_CORE)" \
	  $(TSAN_BUILD)/libatlastrace.so $(TSAN_BUILD)/fake/libcuda.so.1 $(TSAN_BUILD)/tests/rel_stress \
	  $(TSAN_BUILD)/tests/test_reliability

TIMED = sh -c 't0=$$(date +%s); "$$@"; rc=$$?; echo "reliability: $$0: $$(( $$(date +%s) - t0 )) s" >&2; exit $$rc'

.PHONY: rel-plain rel-asan rel-tsan rel-valgrind reliability-check
export ATL_FILE_VARS = $(REL_FILE_VARS)

rel-plain: rel-build
	ATL_STRESS_THREADS=$(STRESS_THREADS) ATL_STRESS_ITERS=$(STRESS_ITERS) ATL_STRESS_ENV="$(STRESS_ENV)" \
	  $(TIMED) "plain: stress, fork, exit paths, bad settings, log safety" $(BUILD)/tests/test_reliability
	$(TIMED) "plain: output files (FIFO, owner, fork, exec, SIGPIPE, caps)" $(BUILD)/tests/test_output

# ASan+UBSan. The target programs are sanitized too; leaks are checked in
# every process (the fake driver frees what it is given back, and a program
# that frees nothing leaks only the fake's pages, which are still reachable).
ASAN_ENV = ATL_TEST_PRELOAD_EXTRA="$(ASAN_RT)" \
           ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:exitcode=66 \
           UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1:exitcode=66
rel-asan: rel-asan-build
	$(ASAN_ENV) $(TIMED) "asan+ubsan: engine unit tests" $(ASAN_BUILD)/tests/test_config
	$(ASAN_ENV) $(TIMED) "asan+ubsan: integration tests" $(ASAN_BUILD)/tests/test_preload
	$(ASAN_ENV) ATL_STRESS_THREADS=$(STRESS_THREADS) ATL_STRESS_ITERS=$(ASAN_STRESS_ITERS) ATL_STRESS_ENV="$(STRESS_ENV)" \
	  $(TIMED) "asan+ubsan: reliability tests" $(ASAN_BUILD)/tests/test_reliability

# TSan: any report is fatal (exit 66), so the stress test fails on a race.
rel-tsan: rel-tsan-build
	ATL_TEST_PRELOAD_EXTRA="$(TSAN_RT)" TSAN_OPTIONS="halt_on_error=1 exitcode=66" \
	  CK_RUN_CASE=stress ATL_STRESS_THREADS=$(STRESS_THREADS) ATL_STRESS_ITERS=$(TSAN_STRESS_ITERS) \
	  ATL_STRESS_ENV="$(STRESS_ENV)" \
	  $(TIMED) "tsan: stress" $(TSAN_BUILD)/tests/test_reliability

# memcheck over a cuGetProcAddress program under the preload.
rel-valgrind: $(BUILD)/libatlastrace.so $(FAKE_LIB) $(BUILD)/tests/tp_gpa
	@command -v valgrind >/dev/null || { echo "reliability: valgrind is missing: make check \
	installs it (or install the Debian package valgrind)" >&2; exit 1; }
	LD_LIBRARY_PATH=$(FAKE_DIR) ATLAS_STATS=1 \
	  $(TIMED) "valgrind: tp_gpa under the preload" \
	  valgrind -q --error-exitcode=1 --leak-check=full --errors-for-leak-kinds=definite \
	    --trace-children=yes \
	    env LD_PRELOAD=$(abspath $(BUILD)/libatlastrace.so) $(BUILD)/tests/tp_gpa >/dev/null

reliability-check: rel-plain rel-asan rel-tsan rel-valgrind

CHECK_TARGETS += reliability-check
