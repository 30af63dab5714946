# Syncs, copies and faults (src/blocking.c, src/kaudit.c):
#   make sync-check       against the fake driver (part of make check)
#   make sync-microbench  CPU cost per launch and per copy of the always-on parts, fake driver
#   make sync-gpu-check   on a GPU: a CUDA program with an out-of-bounds kernel, a PyTorch loop

$(BUILD)/tests/sync_target: tests/targets/sync_target.c $(FAKE_DIR)/libcuda.so
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -rdynamic -o $@ $< -L$(FAKE_DIR) -lcuda -ldl

$(BUILD)/tests/test_sync: tests/integration/test_sync.c tests/integration/run.c | check-deps

$(BUILD)/tests/test_sync_unit: tests/unit/test_sync.c $(BUILD)/libatlas_engine.a | check-deps

.PHONY: sync-check
sync-check: check-deps $(BUILD)/libatlastrace.so $(FAKE_LIB) $(BUILD)/tests/sync_target $(BUILD)/tests/test_sync $(BUILD)/tests/test_sync_unit
	$(BUILD)/tests/test_sync_unit
	$(BUILD)/tests/test_sync

CHECK_TARGETS += sync-check

$(BUILD)/tests/sync_microbench: tests/targets/sync_microbench.c $(FAKE_DIR)/libcuda.so
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< -L$(FAKE_DIR) -lcuda

# IDLE_LIB: a build with nothing always on (e.g. main before this feature),
# to compare against; without it, only native and this build are shown.
.PHONY: sync-microbench
sync-microbench: $(BUILD)/libatlastrace.so $(BUILD)/tests/sync_microbench
	@echo "native:"; LD_LIBRARY_PATH=$(FAKE_DIR) $(BUILD)/tests/sync_microbench $(SYNC_BENCH_N)
	@if [ -n "$(IDLE_LIB)" ]; then echo "idle build ($(IDLE_LIB)):"; \
	  LD_LIBRARY_PATH=$(FAKE_DIR) LD_PRELOAD=$(IDLE_LIB) $(BUILD)/tests/sync_microbench $(SYNC_BENCH_N); fi
	@echo "this build, no settings:"; LD_LIBRARY_PATH=$(FAKE_DIR) LD_PRELOAD=$(BUILD)/libatlastrace.so $(BUILD)/tests/sync_microbench $(SYNC_BENCH_N)
	@echo "this build, ATLAS_D2H_TRACE=1000000000 (backtrace per blocking copy for the sites):"; \
	  ATLAS_D2H_TRACE=1000000000 LD_LIBRARY_PATH=$(FAKE_DIR) LD_PRELOAD=$(BUILD)/libatlastrace.so $(BUILD)/tests/sync_microbench $(SYNC_BENCH_N)
	@echo "this build, ATLAS_DEBUG_SYNC_KERNELS=1:"; ATLAS_DEBUG_SYNC_KERNELS=1 LD_LIBRARY_PATH=$(FAKE_DIR) LD_PRELOAD=$(BUILD)/libatlastrace.so $(BUILD)/tests/sync_microbench $(SYNC_BENCH_N)
SYNC_BENCH_N ?= 300000

# ---- real GPU --------------------------------------------------------------------------------
$(GPU_DIR)/sync_oob: tests/gpu/sync/sync_oob.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(GPU_ARCH) -O2 -o $@ $<

$(GPU_DIR)/flight: tests/gpu/sync/flight.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(GPU_ARCH) -O2 -o $@ $<

.PHONY: sync-gpu-check
sync-gpu-check: $(BUILD)/libatlastrace.so $(BUILD)/atlas-trace $(GPU_DIR)/sync_oob $(GPU_DIR)/flight
	sh tests/gpu/sync/run_sync.sh $(BUILD)

GPU_TARGETS += sync-gpu-check
