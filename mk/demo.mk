# make demo, the README's main command: the demo program (examples/demo_steps.c) run through
# atlas-trace with step diffs, red zones and the blocking-copy summary on. On a machine with a
# GPU (nvidia-smi answers) the real driver runs it; else the project's fake driver, and the
# demo says so. (Paths spelled out: mk/front.mk, which builds them, is read after this file.)

DEMO_DEPS := $(BUILD)/libatlastrace.so $(BUILD)/atlas-trace $(BUILD)/examples/demo_steps
DEMO_OPTS := --trace --redzone=256 --redzone-check=launch

.PHONY: demo
ifeq ($(HAVE_GPU),yes)
demo: $(DEMO_DEPS)
	@echo "demo: real GPU: $$(nvidia-smi -L | head -1)"
	$(BUILD)/atlas-trace $(DEMO_OPTS) $(BUILD)/examples/demo_steps
else
demo: $(DEMO_DEPS) $(BUILD)/fake/libcuda.so.1 $(BUILD)/tests/front_demo_kernels.so
	@echo "demo: no GPU here: running on the project's fake driver (build/fake/libcuda.so.1)"
	LD_LIBRARY_PATH=$(BUILD)/fake $(BUILD)/atlas-trace $(DEMO_OPTS) \
	  $(BUILD)/examples/demo_steps $(BUILD)/tests/front_demo_kernels.so
endif
