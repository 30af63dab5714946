# A fresh machine, for real: the README's two commands in a throwaway Debian bookworm root
# where Check, valgrind and clang are missing, with Debian's apt-get (tests/install/
# fresh_check.sh; needs root and a Debian mirror). .ci/run runs it after make check.
#   make fresh-check      about 7 minutes of CPU time; its wall time: docs/building.md, Tests

.PHONY: fresh-check
fresh-check:
	sh tests/install/fresh_check.sh $(CUDA_INC) $(BUILD)/fresh
