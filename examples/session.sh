#!/bin/sh
# session.sh - a shell session with ALEX: the sqlite3 shell writes through
# the log; plain SQLite is kept out while the log holds pages; `alex
# checkpoint` (or the last close) makes the file a plain database again.
# Run from anywhere: it works in a scratch directory.
set -e
bin=${1:-$(dirname "$0")/../build}
cd "$(mktemp -d)"
# keep the log after the shell exits, to show what a crash would leave
ALEX_CHECKPOINT_ON_CLOSE=0 "$bin/alex-run" sqlite3 shop.db \
	"create table items(name text, qty int); insert into items values('bolt', 40), ('nut', 75);"
"$bin/alex" stat shop.db                       # what the log holds
sqlite3 shop.db 'select * from items' 2>&1 || true   # plain SQLite: refused
"$bin/alex-run" sqlite3 shop.db 'select sum(qty) from items'   # through ALEX: 115
"$bin/alex" checkpoint shop.db                 # back to a plain database
sqlite3 shop.db 'select sum(qty) from items'   # plain SQLite: 115
