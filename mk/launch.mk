# libatlaslaunch: the typed kernel-launch builder (include/atlas/launch.h, src/launch/).
#
#   make launch-check       unit tests against mock driver functions (no GPU), plus an
#                           ASan/UBSan build of the same tests and checks of the exports
#   make launch-gpu-check   real-GPU tests and the example (H100/H200: sm_90a)
#   make launch-bench       builder vs hand-packed cuLaunchKernel, ratio of medians

LAUNCH_SRCS := $(sort $(wildcard src/launch/*.c))
LAUNCH_OBJS := $(LAUNCH_SRCS:%.c=$(BUILD)/%.o)
LAUNCH_A    := $(BUILD)/libatlaslaunch.a
LAUNCH_SO   := $(BUILD)/libatlaslaunch.so

# Export the public API on purpose (ATLAS_LAUNCH_API), nothing else.
$(LAUNCH_OBJS): ALL_CFLAGS += -fvisibility=hidden

$(LAUNCH_A): $(LAUNCH_OBJS)
	@mkdir -p $(dir $@)
	rm -f $@
	$(AR) rcs $@ $^

# The driver symbols stay undefined: the application links -lcuda (or runs under a preload
# that provides them), so this library never picks a libcuda of its own.
$(LAUNCH_SO): $(LAUNCH_OBJS)
	@mkdir -p $(dir $@)
	$(CC) -shared -Wl,-soname,libatlaslaunch.so $(LDFLAGS) -o $@ $^ -lpthread

# The example is compiled with the library; linking it needs libcuda, so it is linked and run
# by launch-gpu-check.
LAUNCH_EXAMPLES := $(patsubst %.c,%,$(wildcard examples/launch_*.c))

ALL_TARGETS += $(LAUNCH_A) $(LAUNCH_SO) $(LAUNCH_EXAMPLES:%=$(BUILD)/%.o)

# ---- unit tests (Check, mock driver, no GPU) ------------------------------------------------

LAUNCH_CHECK_CFLAGS = $(CHECK_CFLAGS)
LAUNCH_CHECK_LIBS = $(CHECK_LIBS)
LAUNCH_TEST := $(BUILD)/tests/launch/test_launch
LAUNCH_TEST_SAN := $(BUILD)/tests/launch/test_launch_san
LAUNCH_SAN := -fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer

$(BUILD)/tests/launch/%.o: ALL_CFLAGS += $(LAUNCH_CHECK_CFLAGS)
$(BUILD)/tests/launch/test_launch.o: | check-deps

$(LAUNCH_TEST): $(BUILD)/tests/launch/test_launch.o $(LAUNCH_A)
	$(CC) $(LDFLAGS) -o $@ $^ $(LAUNCH_CHECK_LIBS) -lpthread

# The same tests with the library compiled in under ASan and UBSan.
$(LAUNCH_TEST_SAN): tests/launch/test_launch.c $(LAUNCH_SRCS) src/launch/internal.h \
                  include/atlas/launch.h | check-deps
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(LAUNCH_CHECK_CFLAGS) $(LAUNCH_SAN) -o $@ tests/launch/test_launch.c \
		$(LAUNCH_SRCS) $(LAUNCH_CHECK_LIBS) -lpthread

.PHONY: launch-check launch-gpu-build launch-gpu-check launch-bench install-launch uninstall-launch
launch-check: $(LAUNCH_TEST) $(LAUNCH_TEST_SAN) $(LAUNCH_SO) $(LAUNCH_A)
	$(LAUNCH_TEST)
	ASAN_OPTIONS=detect_leaks=1 $(LAUNCH_TEST_SAN)
	@# Only the public API leaves the shared library, and nothing it defines allocates.
	@bad=$$(nm -D --defined-only $(LAUNCH_SO) | awk '$$2 ~ /[TDBRW]/ && $$3 !~ /^atlas_/ {print $$3}'); \
	 if [ -n "$$bad" ]; then echo "launch-check: FAIL: unexpected exports: $$bad"; exit 1; fi; \
	 echo "launch-check: PASS: exports are atlas_* only"
	@if nm $(LAUNCH_A) | grep -Eq ' U (malloc|calloc|realloc|free|strdup)$$'; then \
	   echo "launch-check: FAIL: libatlaslaunch.a calls the heap allocator"; exit 1; fi; \
	 echo "launch-check: PASS: libatlaslaunch.a makes no heap calls"
	@if command -v $(CXX) >/dev/null 2>&1; then \
	   echo '#include "atlas/launch.h"' | $(CXX) -x c++ -std=c++17 -Wall -Wextra -Werror \
	     -I include -I $(CUDA_INC) -fsyntax-only - && echo "launch-check: PASS: launch.h is valid C++"; fi

CHECK_TARGETS += launch-check

# ---- real GPU -------------------------------------------------------------------------------

NVCC ?= $(CUDA_HOME)/bin/nvcc
# Linked against the toolkit's stub libcuda; at run time the driver's libcuda.so.1 answers.
LAUNCH_CUDA_LIBS := -L$(CUDA_HOME)/lib64/stubs -L$(CUDA_HOME)/lib64 -lcuda
LAUNCH_NVCCFLAGS := -arch=sm_90a -O2 -std=c++17 -I include
LAUNCH_GPU_TEST := $(BUILD)/tests/gpu/launch/launch_gpu_test
LAUNCH_BENCH := $(BUILD)/bench/launch/launch_bench

$(LAUNCH_GPU_TEST): tests/gpu/launch/launch_gpu_test.cu include/atlas/launch.h $(LAUNCH_A)
	@mkdir -p $(dir $@)
	$(NVCC) $(LAUNCH_NVCCFLAGS) -o $@ $< $(LAUNCH_A) $(LAUNCH_CUDA_LIBS)

$(LAUNCH_BENCH): bench/launch/launch_bench.cu include/atlas/launch.h $(LAUNCH_A)
	@mkdir -p $(dir $@)
	$(NVCC) $(LAUNCH_NVCCFLAGS) -o $@ $< $(LAUNCH_A) $(LAUNCH_CUDA_LIBS)

$(BUILD)/examples/launch_%: $(BUILD)/examples/launch_%.o $(LAUNCH_A)
	$(CC) $(LDFLAGS) -o $@ $^ $(LAUNCH_CUDA_LIBS) -lpthread

launch-gpu-build: $(LAUNCH_GPU_TEST) $(LAUNCH_BENCH) $(LAUNCH_EXAMPLES:%=$(BUILD)/%)

launch-gpu-check: $(LAUNCH_GPU_TEST) $(LAUNCH_EXAMPLES:%=$(BUILD)/%)
	sh tests/gpu/launch/run.sh $(BUILD)

launch-bench: $(LAUNCH_BENCH)
	$(LAUNCH_BENCH)

GPU_TARGETS += launch-gpu-check
BENCH_TARGETS += launch-bench

# ---- install --------------------------------------------------------------------------------

LAUNCH_LIBDIR := $(DESTDIR)$(PREFIX)/lib
LAUNCH_INCDIR := $(DESTDIR)$(PREFIX)/include/atlas
LAUNCH_PCDIR  := $(DESTDIR)$(PREFIX)/lib/pkgconfig
# The toolkit's stub libcuda (soname libcuda.so.1), so that pkg-config --libs links on a
# machine whose only libcuda is there (a build machine, a container without the driver); at run
# time the driver's libcuda.so.1 answers. Left out when the toolkit has none.
LAUNCH_CUDA_STUBS := $(firstword $(wildcard $(CUDA_HOME)/lib64/stubs/libcuda.so \
                       $(CUDA_HOME)/lib/stubs/libcuda.so $(CUDA_HOME)/targets/*/lib/stubs/libcuda.so))
LAUNCH_PC_CUDA_LIBS := $(if $(LAUNCH_CUDA_STUBS),-L$(dir $(LAUNCH_CUDA_STUBS)) )-lcuda

install-launch: $(LAUNCH_A) $(LAUNCH_SO)
	$(INSTALL_DIRS) $(INSTALLED_DIRS_LIST) $(LAUNCH_LIBDIR) $(LAUNCH_INCDIR) $(LAUNCH_PCDIR)
	install -m 644 $(LAUNCH_A) $(LAUNCH_LIBDIR)/libatlaslaunch.a
	install -m 755 $(LAUNCH_SO) $(LAUNCH_LIBDIR)/libatlaslaunch.so
	install -m 644 include/atlas/launch.h $(LAUNCH_INCDIR)/launch.h
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@CUDA_INC@|$(CUDA_INC)|g' \
		-e 's|@CUDA_LIBS@|$(LAUNCH_PC_CUDA_LIBS)|g' atlaslaunch.pc.in \
		> $(LAUNCH_PCDIR)/atlaslaunch.pc
	chmod 644 $(LAUNCH_PCDIR)/atlaslaunch.pc

uninstall-launch:
	rm -f $(LAUNCH_LIBDIR)/libatlaslaunch.a $(LAUNCH_LIBDIR)/libatlaslaunch.so \
		$(LAUNCH_INCDIR)/launch.h $(LAUNCH_PCDIR)/atlaslaunch.pc

INSTALL_TARGETS += install-launch
UNINSTALL_TARGETS += uninstall-launch
