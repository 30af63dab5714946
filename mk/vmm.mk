# Virtual memory management allocations on the ledger (src/vmm.c):
# cuMemCreate, cuMemMap and friends against the fake driver.
#
#   make vmm-check       part of make check

$(BUILD)/tests/vmm_prog: tests/targets/vmm_prog.c $(FAKE_DIR)/libcuda.so
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -rdynamic -o $@ $< -L$(FAKE_DIR) -lcuda -ldl

$(BUILD)/tests/test_vmm: tests/integration/test_vmm.c tests/integration/run.c | check-deps
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(TEST_DEFS) $(CHECK_CFLAGS) -o $@ $^ $(CHECK_LIBS)

.PHONY: vmm-check
vmm-check: check-deps $(BUILD)/libatlastrace.so $(FAKE_LIB) $(BUILD)/tests/vmm_prog $(BUILD)/tests/test_vmm
	$(BUILD)/tests/test_vmm

CHECK_TARGETS += vmm-check
