# atlastrace build. Fragments under mk/ add their own targets to the lists
# below, so each part of the tree owns its own rules.
#
#   make            build/libatlastrace.so, libatlaslaunch, the tools
#   make check      every test that needs no GPU (installs Check if missing)
#   make demo       a sample program under the preload (real GPU if present,
#                   else the fake driver)
#   make gpu-check  the real-GPU suite (run on a machine with a GPU)
#   make bench      overhead figures, as ratios against the native program

# Builds and test suites run in parallel on every core unless -j is given (make check's time:
# docs/building.md, Tests).
# Only the top-level make chooses: a make this tree runs again (make check's
# runner, the install test, the sanitizer builds) shares its jobs, and a -j
# of its own would make it warn "-j2 forced in makefile: resetting jobserver
# mode" and start jobs beyond the top level's count.
NPROC := $(shell nproc 2>/dev/null || echo 2)
ifeq ($(MAKELEVEL),0)
ifeq ($(filter -j%,$(MAKEFLAGS)),)
MAKEFLAGS += -j$(NPROC)
endif
endif

BUILD   ?= build
PREFIX  ?= /usr/local
DESTDIR ?=
CC      ?= cc

# CUDA headers: CUDA_HOME, else the toolkit nvcc on PATH belongs to, else
# /usr/local/cuda. Only the headers are needed to build; no GPU, no libcuda.
ifeq ($(CUDA_HOME),)
  NVCC_PATH := $(shell command -v nvcc 2>/dev/null)
  ifneq ($(NVCC_PATH),)
    CUDA_HOME := $(patsubst %/bin/nvcc,%,$(realpath $(NVCC_PATH)))
  else
    CUDA_HOME := /usr/local/cuda
  endif
endif
CUDA_INC := $(CUDA_HOME)/include
ifeq ($(wildcard $(CUDA_INC)/cuda.h),)
  $(error no CUDA headers found: looked for cuda.h in $(CUDA_INC) (set CUDA_HOME to a CUDA toolkit, put its nvcc on PATH, or install one in /usr/local/cuda))
endif

NVCC     ?= $(CUDA_HOME)/bin/nvcc
GPU_DIR  := $(BUILD)/gpu
# A GPU answers here (make demo and make bench choose by it).
HAVE_GPU := $(shell nvidia-smi -L >/dev/null 2>&1 && echo yes)

WARN     := -Wall -Wextra -Werror -Wshadow -Wstrict-prototypes -Wno-unused-parameter
CFLAGS   ?= -O2 -g
ALL_CFLAGS = -std=gnu11 $(WARN) $(CFLAGS) -fPIC -I include -I src -I $(CUDA_INC) $(EXTRA_CFLAGS)
LDLIBS_CORE := -ldl -lpthread

# Bare `make` builds the library and the tools (`all`: fragments add to ALL_TARGETS), with no
# test framework and no package registry, whichever rule a fragment writes first.
.DEFAULT_GOAL := all

# ---- shared by the fragments: defined here, before any of them is read,
# so that none depends on the order mk/*.mk are included in ----
# atlas-diff's sources (mk/trace.mk builds it; mk/ranks.mk again, with UBSan).
ATLAS_DIFF_SRCS := tools/atlas-diff.c tools/diff-ranks.c tools/diff-runs.c
ATLAS_DIFF_DEPS := $(ATLAS_DIFF_SRCS) tools/diff-ranks.h tools/diff-runs.h
# The fake driver (mk/fake.mk builds it).
FAKE_DIR := $(BUILD)/fake
FAKE_LIB := $(FAKE_DIR)/libcuda.so.1
# Check, the test framework: its flags. Read once, when make reads this file: make check
# installs the test tools first and then runs the suites in a make of their own
# (tools/check-verdict.sh), which reads them after the install.
CHECK_CFLAGS := $(shell pkg-config --cflags check 2>/dev/null)
CHECK_LIBS   := $(shell pkg-config --libs check 2>/dev/null || echo -lcheck)
TEST_DEFS    := -DBUILD_DIR='"$(BUILD)"'

# What a suite needs of Check, asked before anything is built against it. Only make check
# installs test tools (tools/test-tools.sh), once, before any suite runs: a suite run alone,
# and the makes the suites start (c-entry-check, the sanitizer builds, the install test), only
# ask, so no two package installs can run at once.
.PHONY: check-deps
check-deps:
	@pkg-config --exists check 2>/dev/null || { echo "make: Check, the test framework, is \
	missing: make check installs it (or install the Debian packages check and pkg-config)" >&2; \
	exit 1; }

# Test binaries by pattern; a fragment names the binary (and any extra
# prerequisite, such as a header it includes) and the recipe comes from here.
# A unit test: tests/unit/test_X.c against the engine alone, no preload.
UNIT_TEST_LINK = $(CC) $(ALL_CFLAGS) $(CHECK_CFLAGS) -o $@ $< $(BUILD)/libatlas_engine.a \
                 $(CHECK_LIBS) $(LDLIBS_CORE)
$(BUILD)/tests/test_%_unit: tests/unit/test_%.c $(BUILD)/libatlas_engine.a | check-deps
	@mkdir -p $(dir $@)
	$(UNIT_TEST_LINK)
# An integration test: tests/integration/test_X.c and the runner that starts
# target programs under the preload.
$(BUILD)/tests/test_%: tests/integration/test_%.c tests/integration/run.c | check-deps
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(TEST_DEFS) $(CHECK_CFLAGS) -o $@ $(filter %.c %.a,$^) $(CHECK_LIBS) $(LDLIBS_CORE)

ALL_TARGETS   :=
CHECK_TARGETS :=
GPU_TARGETS   :=
BENCH_TARGETS :=
INSTALL_TARGETS :=
UNINSTALL_TARGETS :=

.PHONY: all check demo gpu-check bench install uninstall clean format

include $(sort $(wildcard mk/*.mk))

all: $(ALL_TARGETS)
# First every test tool (Check, valgrind, clang and libFuzzer's runtime, python3's venv),
# installed where missing in one go (tools/test-tools.sh); then the suites, in a make of their own started by
# tools/check-verdict.sh, whose last line is the verdict ("make check: N suites, M checks, all
# passed in T s", or what failed).
check:
	@sh tools/test-tools.sh "$(FUZZ_CC)" || { echo "make check: FAILED: the test tools \
	above are missing and could not be installed; no suite was run"; exit 1; }
	@sh tools/check-verdict.sh "$(MAKE)" $(CHECK_TARGETS)
gpu-check: $(GPU_TARGETS)
# Without a GPU, make bench runs what measures the CPU side and says what it
# left out, instead of failing on the GPU loops.
ifneq ($(HAVE_GPU),yes)
GPU_BENCH_TARGETS := $(filter-out cpu-bench reload-bench ranks-bench alloc-bench trace-churn-bench,$(BENCH_TARGETS))
BENCH_TARGETS := $(filter cpu-bench reload-bench ranks-bench alloc-bench trace-churn-bench,$(BENCH_TARGETS))
bench: bench-no-gpu
.PHONY: bench-no-gpu
bench-no-gpu:
	@echo "make bench: no GPU here: skipping $(GPU_BENCH_TARGETS) (run them on a machine with one)"
endif
bench: $(BENCH_TARGETS)
install: $(INSTALL_TARGETS)
# Once every fragment's files are gone, the folders install created, if empty (mk/front.mk).
uninstall: $(UNINSTALL_TARGETS)
	$(INSTALL_DIRS) --remove $(INSTALLED_DIRS_LIST)

clean:
	rm -rf $(BUILD)

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -MMD -MP -c $< -o $@

-include $(shell find $(BUILD) -name '*.d' -type f 2>/dev/null)
