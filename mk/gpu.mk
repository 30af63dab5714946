# The real-GPU suite of the interposer (run on a machine with a GPU and nvcc;
# on the H200 through the device tool): make core-gpu-check.

GPU_ARCH ?= -arch=sm_90

$(GPU_DIR)/kern.cubin: tests/gpu/core/kern.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(GPU_ARCH) -cubin -o $@ $<

$(GPU_DIR)/gpu_driver: tests/gpu/core/gpu_driver.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O2 -I $(CUDA_INC) -o $@ $< -L$(CUDA_HOME)/lib64/stubs -lcuda

$(GPU_DIR)/gpu_cudart_static: tests/gpu/core/gpu_cudart.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(GPU_ARCH) -O2 -cudart static -o $@ $<

$(GPU_DIR)/gpu_cudart_shared: tests/gpu/core/gpu_cudart.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(GPU_ARCH) -O2 -cudart shared -o $@ $<

$(GPU_DIR)/gpu_reload: tests/gpu/core/gpu_reload.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O2 -I $(CUDA_INC) -o $@ $< -L$(CUDA_HOME)/lib64/stubs -lcuda

CORE_GPU_BINS := $(GPU_DIR)/kern.cubin $(GPU_DIR)/gpu_driver $(GPU_DIR)/gpu_cudart_static \
                 $(GPU_DIR)/gpu_cudart_shared $(GPU_DIR)/gpu_reload

.PHONY: core-gpu-check
core-gpu-check: $(BUILD)/libatlastrace.so $(CORE_GPU_BINS)
	sh tests/gpu/core/run_core.sh $(BUILD)

GPU_TARGETS += core-gpu-check

# The real-program matrix (issue #43): eight programs by seven modes, one table of step-time
# ratios against native with each mode's bar; exits non-zero on a FAIL. Every change to hooks/
# or src/ runs it on the H200 and quotes its table (bench/RESULTS.md).
#   make gpu-matrix [MATRIX_ROWS="gpt2 ..."] [MATRIX_MODES="idle trace ..."] [MATRIX_OUT=DIR]
#   [MATRIX_BLOCKS=15] [MATRIX_ROUNDS=1]: a row's processes take turns on the GPU, block by block
$(GPU_DIR)/matrix_cudart: tests/gpu/matrix/steps_cudart.cu
	@mkdir -p $(dir $@)
	$(NVCC) $(GPU_ARCH) -O2 -cudart static -o $@ $<

$(GPU_DIR)/matrix_driver: tests/gpu/matrix/steps_driver.c
	@mkdir -p $(dir $@)
	$(CC) -std=gnu11 -O2 -I $(CUDA_INC) -o $@ $< -L$(CUDA_HOME)/lib64/stubs -lcuda

# One lent machine's call: the build, the suites in three lanes, the matrix in the time left
# (tests/gpu/run_session.sh): make gpu-session GPU_OUT=DIR [GPU_SECONDS=570]
.PHONY: gpu-session
gpu-session:
	sh tests/gpu/run_session.sh $(or $(GPU_OUT),$(BUILD)/gpu-session) $(or $(GPU_SECONDS),570)

# The runner itself, with stand-ins for its programs (no GPU): turns, ratios, bars, ERR
.PHONY: matrix-check
matrix-check:
	sh tests/harness/test_matrix.sh $(BUILD)

CHECK_TARGETS += matrix-check

.PHONY: gpu-matrix
gpu-matrix: $(BUILD)/libatlastrace.so $(BUILD)/atlas-trace $(GPU_DIR)/kern.cubin \
            $(GPU_DIR)/matrix_cudart $(GPU_DIR)/matrix_driver
	sh tests/gpu/matrix/run_matrix.sh $(BUILD)
