# make demo: a sample program under the preload. On a machine with a GPU
# (nvidia-smi answers and nvcc is there) the real driver; else the fake one.

HAVE_GPU := $(shell nvidia-smi -L >/dev/null 2>&1 && test -x $(NVCC) && echo yes)

.PHONY: demo
ifeq ($(HAVE_GPU),yes)
demo: $(BUILD)/libatlastrace.so $(GPU_DIR)/gpu_cudart_static
	@echo "demo: real GPU ($$(nvidia-smi -L | head -1)): an nvcc program (static cudart) under the preload"
	ATLAS_STATS=1 LD_PRELOAD=$(BUILD)/libatlastrace.so $(GPU_DIR)/gpu_cudart_static
else
demo: $(BUILD)/libatlastrace.so $(FAKE_LIB) $(BUILD)/tests/tp_gpa
	@echo "demo: no GPU here: running on the project's fake driver (build/fake/libcuda.so.1)"
	@echo "demo: a program that fetches the driver through cuGetProcAddress, as cudart does"
	LD_LIBRARY_PATH=$(BUILD)/fake ATLAS_STATS=1 LD_PRELOAD=$(BUILD)/libatlastrace.so $(BUILD)/tests/tp_gpa ptds self
endif
