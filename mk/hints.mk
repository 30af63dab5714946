# Hints that run as printed (src/hint.c): every command a report prints is pasted into sh -c and
# what it then names is checked, and settings that do nothing say so in the user's terms
# (src/unused.c, the debug-sync and capture notes): tests/integration/test_hints.sh. No report
# names a setting literally: tests/harness/test_report_names.py.
#   make hint-check      part of make check
# (Paths spelled out: the fragments that build them may be read after this one.)

$(BUILD)/tests/hint_probe: tests/targets/hint_probe.c $(BUILD)/libatlas_engine.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(BUILD)/libatlas_engine.a $(LDLIBS_CORE)

.PHONY: hint-check
hint-check: $(BUILD)/libatlastrace.so $(BUILD)/atlas-trace $(BUILD)/fake/libcuda.so.1 \
            $(BUILD)/tests/sync_target $(BUILD)/tests/trace_steps $(BUILD)/tests/hint_probe \
            $(BUILD)/tests/redzone_prog
	sh tests/integration/test_hints.sh $(BUILD)
	python3 tests/harness/test_report_names.py src

CHECK_TARGETS += hint-check
