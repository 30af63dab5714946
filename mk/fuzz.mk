# libFuzzer harnesses (fuzz/fuzz_<name>.c), built with clang and run with
# ASan + UBSan.
#
#   make fuzz         each harness for FUZZ_SECONDS (default 300) apiece
#   make fuzz-check   each for FUZZ_CHECK_SECONDS (default 20): part of make check
#
# To add a harness: write fuzz/fuzz_<name>.c (LLVMFuzzerTestOneInput), seed
# fuzz/corpus/<name>/, add <name> to FUZZERS and the sources it tests to
# FUZZ_SRCS_<name> (and any -D it needs to FUZZ_DEFS_<name>). Findings are written to $(BUILD)/fuzz/ (crash-*, leak-*).
#

FUZZ_CC            ?= clang
FUZZ_SECONDS       ?= 300
FUZZ_CHECK_SECONDS ?= 20
FUZZ_FLAGS         := -std=gnu11 -g -O1 -fsanitize=fuzzer,address,undefined \
                      -fno-sanitize-recover=undefined -I include -I src -I $(CUDA_INC)

FUZZERS        := config
FUZZ_SRCS_config := src/config.c
# the trace-file (JSON-lines) reader of tools/atlas-diff, and the diff it feeds
FUZZERS         += trace
FUZZ_SRCS_trace := src/tracediff.c src/stepseries.c src/step.c src/tracejson.c src/stack.c src/hostmap.c src/thread.c \
                   src/realdl.c
# the reader's blocks as small as the inputs: lines cross them everywhere
FUZZ_DEFS_trace := -DATL_READ_BLOCK=61

FUZZ_DIR  := $(BUILD)/fuzz
FUZZ_BINS := $(FUZZERS:%=$(FUZZ_DIR)/fuzz_%)

# clang and libFuzzer's runtime (which Debian ships apart from clang, libclang-rt-N-dev):
# asked for here, installed by make check before any suite runs (tools/test-tools.sh).
.PHONY: fuzz-deps
fuzz-deps:
	@mkdir -p $(FUZZ_DIR)
	@echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { return 0; }' > $(FUZZ_DIR)/probe.c
	@$(FUZZ_CC) -fsanitize=fuzzer $(FUZZ_DIR)/probe.c -o $(FUZZ_DIR)/probe >/dev/null 2>&1; \
	rc=$$?; rm -f $(FUZZ_DIR)/probe $(FUZZ_DIR)/probe.c; [ $$rc = 0 ] || { echo "fuzz: \
	$(FUZZ_CC) with libFuzzer is missing: make check installs it (or install the Debian \
	packages clang and libclang-rt-N-dev)" >&2; exit 1; }

# The headers and tables the sources include count too (a new row of src/config.def must rebuild
# the config fuzzer, or it checks the new row against the old table).
define fuzz_rule
$(FUZZ_DIR)/fuzz_$(1): fuzz/fuzz_$(1).c $(FUZZ_SRCS_$(1)) $(wildcard src/*.h src/*.def) | fuzz-deps
	@mkdir -p $$(dir $$@)
	$(FUZZ_CC) $(FUZZ_FLAGS) $(FUZZ_DEFS_$(1)) -o $$@ $$< $(FUZZ_SRCS_$(1))
endef
$(foreach f,$(FUZZERS),$(eval $(call fuzz_rule,$(f))))

# Dictionaries: $(FUZZ_DIR)/<name>.dict is used when it exists. The config
# one is generic tokens plus every setting's name from config.def.
$(FUZZ_DIR)/config.dict: fuzz/config.dict src/config.def
	@mkdir -p $(dir $@)
	{ cat fuzz/config.dict; grep -o 'ATL_CFG(ATLAS_[A-Z0-9_]*' src/config.def | \
	  sed 's/ATL_CFG(\(.*\)/"\1="/'; } > $@

FUZZ_DICTS := $(FUZZ_DIR)/config.dict

# $(1): seconds per harness. New inputs go to $(FUZZ_DIR)/corpus/<name>;
# the seeds in fuzz/corpus/<name> are only read.
define fuzz_run
	@for f in $(FUZZERS); do \
	  mkdir -p $(FUZZ_DIR)/corpus/$$f; \
	  dict=; [ -f $(FUZZ_DIR)/$$f.dict ] && dict=-dict=$(CURDIR)/$(FUZZ_DIR)/$$f.dict; \
	  echo "fuzz: $$f for $(1) s"; \
	  t0=$$(date +%s); \
	  ( cd $(FUZZ_DIR) && ./fuzz_$$f -max_total_time=$(1) -print_final_stats=1 $$dict \
	      corpus/$$f $(CURDIR)/fuzz/corpus/$$f ) > $(FUZZ_DIR)/fuzz_$$f.log 2>&1 \
	    || { tail -40 $(FUZZ_DIR)/fuzz_$$f.log; echo "fuzz: $$f FAILED (inputs in $(FUZZ_DIR))"; exit 1; }; \
	  echo "fuzz: $$f: $$(grep -o 'stat::number_of_executed_units: *[0-9]*' $(FUZZ_DIR)/fuzz_$$f.log | grep -o '[0-9]*$$') runs, no finding, $$(( $$(date +%s) - t0 )) s"; \
	done
endef

.PHONY: fuzz fuzz-check
fuzz: $(FUZZ_BINS) $(FUZZ_DICTS)
	$(call fuzz_run,$(FUZZ_SECONDS))
fuzz-check: $(FUZZ_BINS) $(FUZZ_DICTS)
	$(call fuzz_run,$(FUZZ_CHECK_SECONDS))

CHECK_TARGETS += fuzz-check
