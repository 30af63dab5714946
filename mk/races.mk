# Races between streams (src/races.c, docs/races.md):
#   make races-check      the seeded cases against the fake driver (part of make check)
#   make races-bench      CPU cost per launch beside the step trace's (fake driver)
#   make races-gpu-check  on a GPU: CUDA C, PyTorch and CuPy races named, correct
#                         multi-stream programs silent, the cost on a GPT-2-like step

$(BUILD)/tests/races_prog: tests/targets/races_prog.c $(FAKE_DIR)/libcuda.so
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -rdynamic -o $@ $< -L$(FAKE_DIR) -lcuda -ldl -lpthread

# Built by make: docs/races.md's example runs it as written.
ALL_TARGETS += $(BUILD)/tests/races_prog

$(BUILD)/tests/test_races: tests/integration/test_races.c tests/integration/run.c | check-deps

$(BUILD)/tests/test_races_unit: tests/unit/test_races.c $(BUILD)/libatlas_engine.a | check-deps

.PHONY: races-check
races-check: check-deps $(BUILD)/libatlastrace.so $(FAKE_LIB) $(BUILD)/tests/races_prog \
             $(BUILD)/tests/test_races_unit $(BUILD)/tests/test_races
	$(BUILD)/tests/test_races_unit
	$(BUILD)/tests/test_races

CHECK_TARGETS += races-check
