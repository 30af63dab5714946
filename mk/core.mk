# The interposer: libatlastrace.so = engine (src/) + hooks (hooks/).

ENGINE_SRCS := $(sort $(wildcard src/*.c))
HOOK_SRCS   := $(sort $(wildcard hooks/*.c))
ENGINE_OBJS := $(ENGINE_SRCS:%.c=$(BUILD)/%.o)
HOOK_OBJS   := $(HOOK_SRCS:%.c=$(BUILD)/%.o)

# Everything is hidden unless exported on purpose (the driver symbols, dlsym,
# the atlas_* API).
$(ENGINE_OBJS) $(HOOK_OBJS): EXTRA_CFLAGS += -fvisibility=hidden
$(HOOK_OBJS): EXTRA_CFLAGS += -I hooks

$(BUILD)/libatlastrace.so: $(ENGINE_OBJS) $(HOOK_OBJS)
	$(CC) -shared -o $@ $^ -Wl,-soname,libatlastrace.so -Wl,-z,defs $(LDLIBS_CORE)

# The engine alone, for unit tests that need no preload.
$(BUILD)/libatlas_engine.a: $(ENGINE_OBJS)
	rm -f $@ && ar rcs $@ $^

ALL_TARGETS += $(BUILD)/libatlastrace.so
