# Reports a person and a CI job read (src/findings.c, src/suppress.c, src/findjson.c,
# src/symbols.c; docs/reports.md): file:line in stacks, leak groups, the print limit,
# suppressions, the findings file and its schema (docs/findings.schema.json).
#
#   make reports-check       part of make check
#   make reports-gpu-check   on a GPU: file:line of an nvcc -g -lineinfo program, the findings
#                            file of PyTorch runs (part of make gpu-check)

# The allocation site in a shared library of its own, with debug information (ALL_CFLAGS has
# -g) and stripped of it; the program that loads either and may replace its file.
$(BUILD)/tests/libsym.so: tests/targets/sym_lib.c $(FAKE_DIR)/libcuda.so
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -shared -o $@ $< -L$(FAKE_DIR) -lcuda

$(BUILD)/tests/libsym_stripped.so: $(BUILD)/tests/libsym.so
	strip --strip-debug -o $@ $<

# sym_rt.c stands for CUDA's runtime linked in statically: no debug information
$(BUILD)/tests/sym_rt.o: tests/targets/sym_rt.c
	@mkdir -p $(dir $@)
	$(CC) $(filter-out -g,$(ALL_CFLAGS)) -g0 -c -o $@ $<

$(BUILD)/tests/sym_prog: tests/targets/sym_prog.c tests/targets/cuda_runtime_sym.h $(BUILD)/tests/sym_rt.o \
                        $(FAKE_DIR)/libcuda.so
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -rdynamic -o $@ $< $(BUILD)/tests/sym_rt.o -L$(FAKE_DIR) -lcuda -ldl

# a libdw.so.1 that is no libdw, first on the library path: reports as on a machine without
# elfutils (file:line from an addr2line program, src/symbols.c)
$(BUILD)/tests/nodw/libdw.so.1:
	@mkdir -p $(dir $@)
	$(CC) -shared -o $@ -x c /dev/null

# temporary paths are built into PATH_MAX buffers from other PATH_MAX buffers (mk/front.mk too)
$(BUILD)/tests/test_reports: ALL_CFLAGS += -Wno-format-truncation
$(BUILD)/tests/test_reports: tests/integration/test_reports.c tests/integration/run.c | check-deps

$(BUILD)/tests/test_findings_unit: tests/unit/test_findings.c $(BUILD)/libatlas_engine.a | check-deps

# dladdr and dlopen of its own, as a loader whose lock another thread holds
$(BUILD)/tests/test_report_locks_unit: tests/unit/test_report_locks.c $(BUILD)/libatlas_engine.a \
                                       | check-deps

.PHONY: reports-check
reports-check: check-deps $(BUILD)/libatlastrace.so $(FAKE_LIB) $(BUILD)/atlas-trace \
               $(BUILD)/atlas-diff $(BUILD)/tests/sym_prog $(BUILD)/tests/libsym.so \
               $(BUILD)/tests/libsym_stripped.so $(BUILD)/tests/nodw/libdw.so.1 \
               $(BUILD)/tests/redzone_prog \
               $(BUILD)/tests/sync_target $(BUILD)/tests/trace_steps $(BUILD)/tests/races_prog \
               $(BUILD)/examples/demo_steps $(BUILD)/tests/front_demo_kernels.so \
               $(BUILD)/tests/test_findings_unit $(BUILD)/tests/test_report_locks_unit \
               $(BUILD)/tests/test_reports
	python3 tests/harness/validate_findings.py --self-test docs/findings.schema.json
	$(BUILD)/tests/test_findings_unit
	$(BUILD)/tests/test_report_locks_unit
	$(BUILD)/tests/test_reports

CHECK_TARGETS += reports-check

# ---- real GPU (make reports-gpu-check) -----------------------------------------------------------
# rz_overrun.cu as a user builds it for line numbers: -g -lineinfo, nvcc's default static cudart
$(GPU_DIR)/rz_overrun_g: tests/gpu/redzone/rz_overrun.cu tests/gpu/redzone/rz_ck.h
	@mkdir -p $(dir $@)
	$(NVCC) $(GPU_ARCH) -g -lineinfo -O2 -o $@ $<

.PHONY: reports-gpu-check
reports-gpu-check: $(BUILD)/libatlastrace.so $(BUILD)/atlas-trace $(GPU_DIR)/rz_overrun_g
	sh tests/gpu/reports/run_reports.sh $(BUILD)

GPU_TARGETS += reports-gpu-check
