# Packages, installed the way their users install: a Debian package (make deb, dpkg-deb) and a
# Python wheel (make wheel: the library and both tools, an atlas-trace console command for a
# venv; python3's zipfile, no network; tagged manylinux for the glibc objdump says they need).
# Both carry the licence and the docs (docs/building.md, Install and packages). make
# package-check installs each where nothing else is (the .deb unpacked into an empty root, the
# wheel into a fresh venv, offline), checks the licence, the docs and the wheel's tag, and runs
# the demo from there on the fake driver; make fresh-check installs the .deb into its Debian
# root.
# (ATLAS_VERSION: mk/front.mk.)

.PHONY: deb wheel package-check
deb: all
	@sh tools/make-deb.sh "$(MAKE)" $(BUILD) $(ATLAS_VERSION)

wheel: $(BUILD)/libatlastrace.so $(BUILD)/atlas-trace $(BUILD)/atlas-diff
	@python3 tools/make-wheel.py $(BUILD) $(ATLAS_VERSION)

package-check: deb wheel $(BUILD)/fake/libcuda.so.1 $(BUILD)/examples/demo_steps \
               $(BUILD)/tests/front_demo_kernels.so $(BUILD)/tests/front_env $(BUILD)/tests/sync_target
	sh tests/install/test_packages.sh $(BUILD) $(ATLAS_VERSION)

CHECK_TARGETS += package-check
