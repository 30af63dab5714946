# Syncs, copies and faults (src/sync.c, src/kaudit.c):
#   make sync-check       against the fake driver (part of make check)
#   make sync-microbench  CPU cost per launch and per copy of the always-on parts, fake driver
#   make sync-gpu-check   on a GPU: a CUDA program with an out-of-bounds kernel, a PyTorch loop

$(BUILD)/tests/sync_target: tests/targets/sync_target.c $(FAKE_DIR)/libcuda.so
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -rdynamic -o $@ $< -L$(FAKE_DIR) -lcuda -ldl

$(BUILD)/tests/test_sync: tests/integration/test_sync.c tests/integration/run.c | check-deps
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(TEST_DEFS) $(CHECK_CFLAGS) -o $@ $^ $(CHECK_LIBS)

.PHONY: sync-check
sync-check: check-deps $(BUILD)/libatlastrace.so $(FAKE_LIB) $(BUILD)/tests/sync_target $(BUILD)/tests/test_sync
	$(BUILD)/tests/test_sync

CHECK_TARGETS += sync-check
