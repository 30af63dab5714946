# The fake CUDA driver: build/fake/libcuda.so.1 (+ libcuda.so), a host-only
# libcuda that every GPU-less test runs against (LD_LIBRARY_PATH=build/fake).
# See tests/fake/fakecuda.h.
#
#   make fake         the library
#   make fake-check   the library's own self-test (Check)

# (FAKE_DIR and FAKE_LIB: Makefile, for every fragment)
FAKE_SRCS    := $(addprefix tests/fake/,fake_core.c fake_device.c fake_mem.c fake_copy.c \
                  fake_stream.c fake_graph.c fake_module.c fake_launch.c fake_ptds.c \
                  fake_gpa.c fake_redzone.c)
FAKE_OBJS    := $(FAKE_SRCS:%.c=$(BUILD)/%.o)
# the engine's address map, for O(1) lookups by allocation base
FAKE_LINK_OBJS := $(FAKE_OBJS) $(BUILD)/src/addrmap.o
FAKE_TESTMOD := $(FAKE_DIR)/fake_testmod.so
FAKE_SELFTEST := $(FAKE_DIR)/fake_selftest

# -D__CUDA_API_VERSION_INTERNAL: cuda.h declares every ABI variant (_v2,
# _ptds, _ptsz, the legacy ones) under its own name with its exact prototype,
# so each definition is type-checked against the real one.
$(FAKE_OBJS): ALL_CFLAGS += -D__CUDA_API_VERSION_INTERNAL

# -Bsymbolic: the fake's own references (the pointers cuGetProcAddress hands
# out, internal calls) bind inside the library, as in the real libcuda, even
# when a preloaded interposer exports the same names.
$(FAKE_LIB): $(FAKE_LINK_OBJS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $(LDFLAGS) -shared -Wl,-soname,libcuda.so.1 -Wl,-Bsymbolic -o $@ $^ $(LDLIBS_CORE)
	ln -sf libcuda.so.1 $(FAKE_DIR)/libcuda.so

$(FAKE_DIR)/libcuda.so: $(FAKE_LIB)

$(FAKE_TESTMOD): tests/fake/fake_testmod.c tests/fake/fakecuda.h
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -shared -o $@ $<

$(FAKE_SELFTEST): tests/fake/fake_selftest.c tests/fake/fakecuda.h tests/fake/ptds.def $(FAKE_LIB) \
                  | check-deps
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(CHECK_CFLAGS) $(LDFLAGS) -o $@ $< -L$(FAKE_DIR) -lcuda $(CHECK_LIBS) $(LDLIBS_CORE)

.PHONY: fake fake-check
fake: $(FAKE_LIB)

fake-check: $(FAKE_SELFTEST) $(FAKE_TESTMOD)
	LD_LIBRARY_PATH=$(FAKE_DIR) FAKE_TESTMOD=$(FAKE_TESTMOD) $(FAKE_SELFTEST)

ALL_TARGETS   += $(FAKE_LIB)
CHECK_TARGETS += fake-check
