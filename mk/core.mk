# The interposer: libatlastrace.so = engine (src/) + hooks (hooks/).

ENGINE_SRCS := $(sort $(wildcard src/*.c))
HOOK_SRCS   := $(sort $(wildcard hooks/*.c))
ENGINE_OBJS := $(ENGINE_SRCS:%.c=$(BUILD)/%.o)
HOOK_OBJS   := $(HOOK_SRCS:%.c=$(BUILD)/%.o)

# Everything is hidden unless exported on purpose (the driver symbols, dlsym,
# the atlas_* API).
$(ENGINE_OBJS) $(HOOK_OBJS): EXTRA_CFLAGS += -fvisibility=hidden
$(HOOK_OBJS): EXTRA_CFLAGS += -I hooks

# -Bsymbolic-functions: our own references to our wrappers (the tables that
# dlsym and cuGetProcAddress hand out) must mean ours even where another
# library in the global scope defines the same cu* names, as libcuda does
# when we are loaded with dlopen rather than preloaded.
$(BUILD)/libatlastrace.so: $(ENGINE_OBJS) $(HOOK_OBJS)
	$(CC) -shared -o $@ $^ -Wl,-soname,libatlastrace.so -Wl,-z,defs -Wl,-Bsymbolic-functions $(LDLIBS_CORE)

# The engine alone, for unit tests that need no preload.
$(BUILD)/libatlas_engine.a: $(ENGINE_OBJS)
	rm -f $@ && ar rcs $@ $^

ALL_TARGETS += $(BUILD)/libatlastrace.so
