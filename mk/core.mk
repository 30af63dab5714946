# The interposer: libatlastrace.so = engine (src/) + hooks (hooks/).

ENGINE_SRCS := $(sort $(wildcard src/*.c))
HOOK_SRCS   := $(sort $(wildcard hooks/*.c))
ENGINE_OBJS := $(ENGINE_SRCS:%.c=$(BUILD)/%.o)
HOOK_OBJS   := $(HOOK_SRCS:%.c=$(BUILD)/%.o)

# Everything is hidden unless exported on purpose (the driver symbols, dlsym,
# the atlas_* API).
$(ENGINE_OBJS) $(HOOK_OBJS): EXTRA_CFLAGS += -fvisibility=hidden
# -fno-lto: the x86-64 entry stubs name slow_ and mid_ functions in assembly,
# which link-time optimisation could rename (hooks.c).
$(HOOK_OBJS): EXTRA_CFLAGS += -I hooks -fno-lto
# -fexceptions: a C++ exception thrown through a driver call (a callback, the fake driver's
# host kernels) runs the slow path's cleanup as it passes (hooks.c, ATL_SLOW); the cleanup
# is a landing pad out of the path's line, the entries are assembly
$(BUILD)/hooks/hooks.o: EXTRA_CFLAGS += -fexceptions

# Each slow path builds its event with a designated initializer; GCC zeroes
# the larger ones with `rep stos`, whose start-up costs more than the rest of
# the hook (measured: 309 of them in hooks.o). Unrolled stores instead, where
# the compiler takes the option (GCC on x86).
STRINGOP_FLAG := $(shell $(CC) -mstringop-strategy=unrolled_loop -Werror -E -x c /dev/null \
                   >/dev/null 2>&1 && echo -mstringop-strategy=unrolled_loop)
$(HOOK_OBJS) $(BUILD)/src/engine.o: EXTRA_CFLAGS += $(STRINGOP_FLAG)

# -Bsymbolic-functions: our own references to our wrappers (the tables that
# dlsym and cuGetProcAddress hand out) must mean ours even where another
# library in the global scope defines the same cu* names, as libcuda does
# when we are loaded with dlopen rather than preloaded.
#
# -z nodelete: dlclose leaves the library mapped. Its pthread keys' destructors
# (per-thread caches), its atexit handler and any hook pointer the program kept
# would otherwise point into unmapped code once the threads that used it exit.
$(BUILD)/libatlastrace.so: $(ENGINE_OBJS) $(HOOK_OBJS)
	$(CC) -shared -o $@ $^ -Wl,-soname,libatlastrace.so -Wl,-z,defs -Wl,-Bsymbolic-functions \
	  -Wl,-z,nodelete $(LDLIBS_CORE)

# The engine alone, for unit tests that need no preload.
$(BUILD)/libatlas_engine.a: $(ENGINE_OBJS)
	rm -f $@ && ar rcs $@ $^

ALL_TARGETS += $(BUILD)/libatlastrace.so

# The C hook entry (hooks.c's fallback where there is no x86-64 stub) is
# built and tested here too, so it cannot rot unseen: the core, sync, trace
# and race suites against the fake driver, in a build directory of its own.
.PHONY: c-entry-check
c-entry-check:
	$(MAKE) BUILD=$(BUILD)/c-entry CFLAGS="$(CFLAGS) -DATL_C_FAST" core-check sync-check trace-check \
	  races-check

CHECK_TARGETS += c-entry-check

# The layering of docs/ARCHITECTURE.md: no feature includes engine.h or uses
# a symbol of engine.o (tests/harness/test_layers.sh). Part of core-check.
.PHONY: layers-check
layers-check: $(BUILD)/libatlastrace.so
	sh tests/harness/test_layers.sh $(BUILD)

core-check: layers-check
