# The user's front: the atlas-trace command, man pages, install.
#
#   build/atlas-trace      next to build/libatlastrace.so, where it looks first
#   make install           PREFIX (/usr/local) and DESTDIR as usual; the licence and the docs
#                          in PREFIX/share/doc/atlastrace
#   make front-check       option parsing, exit statuses, library search, --no-children,
#                          and an install/uninstall round trip into a temporary DESTDIR
#
# Other fragments add their command-line tools to INSTALL_BINS (and their ALL_TARGETS), their
# man pages to INSTALL_MANS: `make install` builds `all` first, and reads both lists only when
# it runs, so the order in which fragments are included does not matter.

ATLAS_VERSION := $(shell cat VERSION 2>/dev/null || echo unknown)
FRONT_TOOL := $(BUILD)/atlas-trace

# Linked with the engine's archive for the settings table and its parser (src/config.def,
# src/config.c): the tool refuses what the library would ignore, by the library's own rules.
$(FRONT_TOOL): tools/atlas-trace.c VERSION $(BUILD)/libatlas_engine.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -DATLAS_VERSION='"$(ATLAS_VERSION)"' $(LDFLAGS) -o $@ $< \
		$(BUILD)/libatlas_engine.a $(LDLIBS_CORE)

ALL_TARGETS += $(FRONT_TOOL)

INSTALL_BINS += $(FRONT_TOOL)
INSTALL_MANS += man/atlas-trace.1 man/atlas-diff.1
# launch.h is installed by install-launch (mk/launch.mk).
FRONT_HEADERS = $(filter-out include/atlas/launch.h,$(wildcard include/atlas/*.h))

FRONT_BINDIR := $(DESTDIR)$(PREFIX)/bin
FRONT_LIBDIR := $(DESTDIR)$(PREFIX)/lib
FRONT_INCDIR := $(DESTDIR)$(PREFIX)/include/atlas
FRONT_MANDIR := $(DESTDIR)$(PREFIX)/share/man/man1
# The licence, the README and the documents the reports and --help point to (docs/front.md,
# docs/findings.schema.json, ...), where Debian and the FHS keep a package's documentation; the
# README's links to docs/ hold there too.
FRONT_DOCDIR := $(DESTDIR)$(PREFIX)/share/doc/atlastrace
FRONT_DOCS := LICENSE README.md
FRONT_DOCS_DOCS = $(wildcard docs/*.md) docs/findings.schema.json
# The folders make install created (tools/install-dirs.sh), which make uninstall removes once
# they are empty; mk/launch.mk records its own there too.
INSTALL_DIRS := sh tools/install-dirs.sh
INSTALLED_DIRS_LIST := $(DESTDIR)$(PREFIX)/share/atlastrace/created-folders

.PHONY: install-front uninstall-front
install-front: all
	$(INSTALL_DIRS) $(INSTALLED_DIRS_LIST) $(FRONT_BINDIR) $(FRONT_LIBDIR) $(FRONT_INCDIR) \
		$(FRONT_MANDIR) $(FRONT_DOCDIR)/docs
	install -m 755 $(BUILD)/libatlastrace.so $(FRONT_LIBDIR)/libatlastrace.so
	install -m 755 $(INSTALL_BINS) $(FRONT_BINDIR)/
	install -m 644 $(INSTALL_MANS) $(FRONT_MANDIR)/
	install -m 644 $(FRONT_DOCS) $(FRONT_DOCDIR)/
	install -m 644 $(FRONT_DOCS_DOCS) $(FRONT_DOCDIR)/docs/
	$(if $(FRONT_HEADERS),install -m 644 $(FRONT_HEADERS) $(FRONT_INCDIR)/)

uninstall-front:
	rm -f $(FRONT_LIBDIR)/libatlastrace.so $(addprefix $(FRONT_BINDIR)/,$(notdir $(INSTALL_BINS))) \
		$(addprefix $(FRONT_MANDIR)/,$(notdir $(INSTALL_MANS))) \
		$(addprefix $(FRONT_INCDIR)/,$(notdir $(FRONT_HEADERS))) \
		$(addprefix $(FRONT_DOCDIR)/,$(FRONT_DOCS)) \
		$(addprefix $(FRONT_DOCDIR)/docs/,$(notdir $(FRONT_DOCS_DOCS)))

INSTALL_TARGETS += install-front
UNINSTALL_TARGETS += uninstall-front

# ---- tests ----------------------------------------------------------------------------------

FRONT_TARGET := $(BUILD)/tests/front_env
FRONT_TEST := $(BUILD)/tests/test_front

$(FRONT_TARGET): tests/targets/front_env.c
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $<

# Paths in the test are built with snprintf into PATH_MAX buffers from other PATH_MAX buffers;
# gcc cannot see that /tmp/atlas-front-XXXXXX is short.
$(FRONT_TEST): ALL_CFLAGS += -Wno-format-truncation
$(FRONT_TEST): tests/integration/test_front.c tests/integration/run.c tests/integration/run.h | check-deps
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(TEST_DEFS) $(CHECK_CFLAGS) -o $@ tests/integration/test_front.c \
		tests/integration/run.c $(CHECK_LIBS)

# The demo program (examples/demo_steps.c) and its kernels for the fake driver. It is linked
# against the fake's libcuda.so only to resolve the names (soname libcuda.so.1): at run time the
# real driver answers on a machine with a GPU, the fake with LD_LIBRARY_PATH=$(FAKE_DIR).
FRONT_DEMO := $(BUILD)/examples/demo_steps
FRONT_DEMO_KERNELS := $(BUILD)/tests/front_demo_kernels.so

$(FRONT_DEMO): examples/demo_steps.c $(FAKE_DIR)/libcuda.so
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -rdynamic -o $@ $< -L$(FAKE_DIR) -lcuda

$(FRONT_DEMO_KERNELS): tests/targets/front_demo_kernels.c tests/fake/fakecuda.h
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) $(LDFLAGS) -shared -o $@ $<

# Built by make: the documentation's commands that need no GPU run the demo on the fake driver.
ALL_TARGETS += $(FRONT_DEMO) $(FRONT_DEMO_KERNELS)

# The settings table's options, listed for the documentation check (test_option_docs.sh).
$(BUILD)/tests/option_rows: tests/targets/option_rows.c $(BUILD)/libatlas_engine.a
	@mkdir -p $(dir $@)
	$(CC) $(ALL_CFLAGS) -o $@ $< $(BUILD)/libatlas_engine.a $(LDLIBS_CORE)

.PHONY: front-check
# The targets of the red-zone, sync and trace suites (built by their fragments) give the
# --error-exitcode tests an overrun, a leak, a fault and differing steps.
front-check: check-deps $(FRONT_TOOL) $(BUILD)/libatlastrace.so $(FRONT_TARGET) $(FRONT_TEST) $(FAKE_LIB) \
             $(FRONT_DEMO) $(FRONT_DEMO_KERNELS) $(BUILD)/tests/redzone_prog $(BUILD)/tests/sync_target \
             $(BUILD)/tests/trace_steps $(BUILD)/tests/option_rows $(BUILD)/tests/races_prog
	$(FRONT_TEST)
	sh tests/integration/test_option_docs.sh $(BUILD)
	sh tests/integration/front_install.sh $(MAKE) $(BUILD)

CHECK_TARGETS += front-check

# ---- real GPU (make front-gpu-check) -------------------------------------------------------
# build/gpu/gpu_cudart_static is built by mk/gpu.mk (included after this file, so spelled out).

.PHONY: front-gpu-check
# wheel: mk/package.mk (read after this file)
front-gpu-check: $(FRONT_TOOL) $(BUILD)/libatlastrace.so $(BUILD)/gpu/gpu_cudart_static $(FRONT_DEMO) wheel
	sh tests/gpu/front/run_front.sh $(BUILD)

GPU_TARGETS += front-gpu-check
