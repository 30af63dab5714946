# Golden-output tests of the main reports (tests/golden/): each report, with
# PIDs, addresses, times and code offsets normalised, must equal its .out
# file line for line.
#   make golden-check    compare (part of make check)
#   make golden-update   rewrite the .out files after an intended change
GOLDEN_DEPS := $(BUILD)/libatlastrace.so $(FAKE_LIB) $(BUILD)/tests/redzone_prog \
               $(BUILD)/tests/sync_target $(BUILD)/tests/trace_steps $(BUILD)/tests/vmm_prog

.PHONY: golden-check golden-update
golden-check: $(GOLDEN_DEPS)
	sh tests/golden/run_golden.sh $(BUILD)

golden-update: $(GOLDEN_DEPS)
	sh tests/golden/run_golden.sh $(BUILD) --update

CHECK_TARGETS += golden-check
