#!/bin/sh
# N exported functions that nothing calls, as assembly (x86-64 or aarch64), for the symbol
# table of bench/trace/churn_lib.c's library: a module as large as a framework's, to name
# frames in (issue #43).
#   gen_syms.sh N > syms.S
n=${1:-10000}
awk -v n="$n" 'BEGIN {
    print "\t.text"
    for (i = 0; i < n; i++) {
        printf "\t.globl churn_sym_%d\n\t.type churn_sym_%d, @function\nchurn_sym_%d:\n\tret\n\t.size churn_sym_%d, .-churn_sym_%d\n", i, i, i, i, i
    }
    print "\t.section .note.GNU-stack,\"\",@progbits"
}'
