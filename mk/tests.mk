# Tests that need no GPU: unit tests of the engine, and target programs run
# under the preload against the fake driver (build/fake/libcuda.so.1).

# (Check's flags, check-deps and the pattern rules of test binaries: Makefile.)

TARGET_COMMON := tests/targets/workload.c
# workload.c, tp_every.c and test_preload.c include the hook list: a binary
# built from them goes stale when a hook is added (recipes compile only the
# .c prerequisites).
HOOK_LIST := hooks/hooks.def
TARGET_BINS := $(BUILD)/tests/tp_linked $(BUILD)/tests/tp_linked_ptds $(BUILD)/tests/tp_dlsym \
               $(BUILD)/tests/tp_gpa $(BUILD)/tests/tp_threads $(BUILD)/tests/tp_every

$(BUILD)/tests/tp_linked: tests/targets/tp_linked.c $(TARGET_COMMON) $(HOOK_LIST) $(FAKE_DIR)/libcuda.so
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ tests/targets/tp_linked.c $(TARGET_COMMON) -L$(BUILD)/fake -lcuda -ldl

$(BUILD)/tests/tp_linked_ptds: tests/targets/tp_linked.c $(TARGET_COMMON) $(HOOK_LIST) $(FAKE_DIR)/libcuda.so
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -DCUDA_API_PER_THREAD_DEFAULT_STREAM -o $@ tests/targets/tp_linked.c $(TARGET_COMMON) -L$(BUILD)/fake -lcuda -ldl

$(BUILD)/tests/tp_dlsym: tests/targets/tp_dlsym.c $(TARGET_COMMON) $(HOOK_LIST)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $(filter %.c,$^) -ldl

$(BUILD)/tests/tp_every: tests/targets/tp_every.c $(HOOK_LIST)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $(filter %.c,$^) -ldl

$(BUILD)/tests/tp_gpa: tests/targets/tp_gpa.c tests/targets/gpa_resolve.c $(TARGET_COMMON) $(HOOK_LIST)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $(filter %.c,$^) -ldl

$(BUILD)/tests/tp_threads: tests/targets/tp_threads.c tests/targets/gpa_resolve.c $(TARGET_COMMON) $(HOOK_LIST)
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $(filter %.c,$^) -ldl -lpthread

# Unit tests older than the _unit suffix keep their names (the recipe: Makefile).
$(BUILD)/tests/test_config $(BUILD)/tests/test_engine: $(BUILD)/tests/%: tests/unit/%.c \
                                                       $(BUILD)/libatlas_engine.a | check-deps
	@mkdir -p $(dir $@)
	$(UNIT_TEST_LINK)

$(BUILD)/tests/test_preload: $(HOOK_LIST)

.PHONY: core-check
core-check: check-deps $(BUILD)/libatlastrace.so $(FAKE_LIB) $(TARGET_BINS) $(BUILD)/tests/test_config $(BUILD)/tests/test_engine $(BUILD)/tests/test_copy_unit $(BUILD)/tests/test_preload \
            $(BUILD)/tests/test_stack_unit
	$(BUILD)/tests/test_config
	$(BUILD)/tests/test_stack_unit
	$(BUILD)/tests/test_engine
	$(BUILD)/tests/test_copy_unit
	$(BUILD)/tests/test_preload

CHECK_TARGETS += core-check

# The install path of a fresh machine, against stand-in apt-get/sudo/id.
.PHONY: install-path-check
install-path-check:
	sh tests/install/test_ensure_deb.sh

CHECK_TARGETS += install-path-check

# make check's last line (tools/check-verdict.sh), against a stand-in make.
.PHONY: verdict-check
verdict-check:
	sh tests/harness/test_check_verdict.sh

CHECK_TARGETS += verdict-check

# The documentation's commands, as written (tests/docs/test_doc_commands.sh): what `make`
# builds is what they may use, and the list of it goes with them.
.PHONY: docs-check
docs-check: all
	DOCS_BUILD='$(BUILD)' DOCS_BUILT='$(ALL_TARGETS)' sh tests/docs/test_doc_commands.sh

CHECK_TARGETS += docs-check
