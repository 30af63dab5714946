#!/bin/sh
# install-dirs.sh LIST DIR...     create each DIR (as install -d) and append to LIST every
#                                 folder that did not exist before, parents included
# install-dirs.sh --remove LIST   remove the folders LIST names that are now empty, deepest
#                                 first, then LIST itself and its folder when empty
#
# make install records what it created and make uninstall removes exactly those folders once
# empty: a prefix's bin/ or share/man/ that existed before, or that holds other files, stays.
set -eu
if [ "${1:-}" = --remove ]; then
    list=$2
    [ -f "$list" ] || exit 0
    dirs=$(cat "$list")
    # the list and its own folder first: that folder sits in share/, which is empty only
    # once it is gone (it was left behind when removed last)
    rm -f "$list"
    rmdir "$(dirname "$list")" 2>/dev/null || true
    # deepest first: a parent is empty only once its children are gone
    printf '%s\n' "$dirs" | awk 'NF { print length($0) "\t" $0 }' | sort -rn | cut -f2- | uniq |
        while IFS= read -r d; do rmdir "$d" 2>/dev/null || true; done
    exit 0
fi
list=$1
shift
new=""
for dir in "$@"; do
    d=$dir
    while [ -n "$d" ] && [ "$d" != / ] && [ "$d" != . ] && [ ! -d "$d" ]; do
        new="$new$d
"
        d=$(dirname "$d")
    done
done
for dir in "$@"; do
    install -d "$dir"
done
mkdir -p "$(dirname "$list")"
[ -n "$new" ] && printf '%s' "$new" >>"$list"
exit 0
