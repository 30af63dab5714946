# What the red-zone benchmark scripts (run_redzone_bench.sh,
# run_torch_bench.sh) share; sourced, with $lib set to the library's path.

# envs prefix command... -> its stdout, preloaded; envs "-": nothing set and
# no preload; envs "native:VAR=V ...": those set, no preload. The framework
# pool settings the library would route are cleared first, so every row
# starts from PyTorch's default.
run() {
    envs=$1 prefix=$2
    shift 2
    case $envs in
    -)
        # shellcheck disable=SC2086
        env -u PYTORCH_CUDA_ALLOC_CONF -u PYTORCH_ALLOC_CONF ATLAS_LOG=/dev/null $prefix "$@"
        ;;
    native:*)
        # shellcheck disable=SC2086
        env -u PYTORCH_CUDA_ALLOC_CONF -u PYTORCH_ALLOC_CONF ATLAS_LOG=/dev/null ${envs#native:} \
            $prefix "$@"
        ;;
    *)
        # shellcheck disable=SC2086
        env -u PYTORCH_CUDA_ALLOC_CONF -u PYTORCH_ALLOC_CONF ATLAS_LOG=/dev/null $envs \
            LD_PRELOAD="$lib" $prefix "$@"
        ;;
    esac 2>/dev/null
}

median() { # file -> median, or "-" when the file is missing or empty
    [ -s "$1" ] || { echo -; return; }
    sort -n "$1" | awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }'
}

cell() { # value base -> "v (r.rrx)"
    if [ "$1" = - ] || [ "$2" = - ]; then echo "$1"; return; fi
    awk -v v="$1" -v b="$2" 'BEGIN { printf "%.2f (%.2fx)", v, v / b }'
}
