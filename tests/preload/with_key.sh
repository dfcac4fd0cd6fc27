#!/bin/sh
# with_key.sh COMMAND [ARGS...] - runs a campaign with ALEX_KEY_FILE set to
# a fresh random key (mode 600), so that every database it makes under ALEX
# is encrypted: the crash and power-cut campaigns, repeated with a key.
k=$(mktemp /tmp/alex-key.XXXXXX) || exit 1
head -c 64 /dev/urandom >"$k" && chmod 600 "$k" || { rm -f "$k"; exit 1; }
ALEX_KEY_FILE=$k "$@"
rc=$?
rm -f "$k"
exit $rc
