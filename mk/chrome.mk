# Chrome trace / Perfetto export of the step trace (src/chrome.c,
# docs/chrome.md) and the two-rank comparison: make chrome-check.
# (Read before fake.mk and tests.mk: prerequisites name paths, not their
# variables.)

$(BUILD)/tests/ranks: tests/targets/ranks.c $(BUILD)/fake/libcuda.so
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< -L$(BUILD)/fake -lcuda -ldl -lpthread

# Built by make: docs/chrome.md's two-rank example runs it on the fake driver as written.
ALL_TARGETS += $(BUILD)/tests/ranks

$(BUILD)/tests/test_chrome: tests/integration/test_chrome.c tests/integration/run.c | check-deps

.PHONY: chrome-check
chrome-check: check-deps $(BUILD)/libatlastrace.so $(BUILD)/fake/libcuda.so.1 \
              $(BUILD)/tests/trace_steps $(BUILD)/tests/ranks $(BUILD)/atlas-diff \
              $(BUILD)/tests/test_chrome
	$(BUILD)/tests/test_chrome

CHECK_TARGETS += chrome-check
