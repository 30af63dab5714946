# Many ranks (docs/ranks.md): atlas-diff --ranks (tools/diff-ranks.c), the
# hang report (src/hang.c), and their tests on the fake driver: make ranks-check.
# (Read before tests.mk and fake.mk: prerequisites name paths.)

# Synthetic rank files: the tests' and ranks-bench's input.
$(BUILD)/bench/gen_ranks: bench/ranks/gen_ranks.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $<

# Built by make: docs/ranks.md's example runs it as written.
ALL_TARGETS += $(BUILD)/bench/gen_ranks

$(BUILD)/tests/test_ranks: tests/integration/test_ranks.c tests/integration/run.c | check-deps

# The fast pass of --ranks on the library writer's lines: the test includes
# the tool's file (its hashing is static), so it is rebuilt with it.
$(BUILD)/tests/test_diffranks_unit: tools/diff-ranks.c tools/diff-ranks.h src/traceformat.h \
                                    src/jsonw.h src/tracejson.h

# atlas-diff again, with UndefinedBehaviorSanitizer (its tools' sources):
# ranks-check runs it where nothing is found (issue #28: qsort of nothing).
$(BUILD)/tests/atlas-diff-ubsan: $(ATLAS_DIFF_DEPS) $(BUILD)/libatlas_engine.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -fsanitize=undefined -fno-sanitize-recover=undefined -DATLAS_VERSION='"ubsan"' \
	  -o $@ $(ATLAS_DIFF_SRCS) $(BUILD)/libatlas_engine.a $(LDLIBS_CORE)

.PHONY: ranks-check
ranks-check: check-deps $(BUILD)/libatlastrace.so $(BUILD)/fake/libcuda.so.1 \
             $(BUILD)/tests/ranks $(BUILD)/atlas-diff $(BUILD)/bench/gen_ranks \
             $(BUILD)/tests/test_ranks $(BUILD)/tests/atlas-diff-ubsan \
             $(BUILD)/tests/test_diffranks_unit
	$(BUILD)/tests/test_diffranks_unit
	$(BUILD)/tests/test_ranks

CHECK_TARGETS += ranks-check

# atlas-diff --ranks at scale (CPU only): make ranks-bench [RANKS_BENCH_STEPS=10000]
# The default, 1,000 steps, writes 1.9 GB of files; 10,000 (the scale of
# issue 17) writes 19 GB.
RANKS_BENCH_RANKS ?= 64
RANKS_BENCH_STEPS ?= 1000
RANKS_BENCH_OPS   ?= 100
RANKS_BENCH_REPS  ?= 3
.PHONY: ranks-bench
ranks-bench: $(BUILD)/atlas-diff $(BUILD)/bench/gen_ranks
	sh bench/ranks/run_ranks_bench.sh $(BUILD) $(RANKS_BENCH_RANKS) $(RANKS_BENCH_STEPS) \
	  $(RANKS_BENCH_OPS) $(RANKS_BENCH_REPS)

BENCH_TARGETS += ranks-bench
