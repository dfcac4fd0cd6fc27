#!/usr/bin/env bash
# tests/doctor/doctor.sh BUILD_DIR_OR_BINARY
#
# Checks `alex doctor` on real programs: the sqlite3 shell, python3, C
# programs built here against libsqlite3.so, libsqlite3.a and -static, a
# setuid copy, Go programs, a shared object standing in for a Node addon,
# the library search ($ORIGIN, RPATH, LD_LIBRARY_PATH), scripts, --json and
# the errors.  Each check asserts the exit status and key lines.
#
# BUILD_DIR_OR_BINARY: a build directory (runs DIR/alex doctor ...) or a
# binary taking the arguments of `alex doctor` (runs BINARY ...).
# Exit 0 if every check that ran passed, 1 if one failed, 77 if none could
# run.  A check whose tools are missing prints "SKIP name: why".
set -u

if [ $# -ne 1 ]; then
	echo "usage: $0 BUILD_DIR_OR_BINARY" >&2
	exit 2
fi
if [ -d "$1" ]; then
	DOCTOR=("$1/alex" doctor)
else
	DOCTOR=("$1")
fi
if [ ! -x "${DOCTOR[0]}" ]; then
	echo "SKIP doctor: ${DOCTOR[0]} is not an executable"
	exit 77
fi
DOCTOR[0]=$(cd "$(dirname "${DOCTOR[0]}")" && pwd)/$(basename "${DOCTOR[0]}")
top=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d /tmp/alex-doctor-test.XXXXXX) || exit 77
trap 'rm -rf "$tmp"' EXIT
cd "$tmp" || exit 77
pass=0 fail=0 skip=0

# expect NAME STATUS REGEX... -- DOCTOR-ARGS...: the doctor must exit with
# STATUS and print (stdout and stderr) a line matching each REGEX.
expect() {
	local name=$1 want=$2 re=() out rc miss=""
	shift 2
	while [ $# -gt 0 ] && [ "$1" != -- ]; do
		re+=("$1")
		shift
	done
	shift
	out=$("${DOCTOR[@]}" "$@" 2>&1)
	rc=$?
	for r in "${re[@]}"; do
		grep -qE -- "$r" <<<"$out" || miss="$miss [$r]"
	done
	if [ "$rc" -eq "$want" ] && [ -z "$miss" ]; then
		echo "PASS $name"
		pass=$((pass + 1))
		return 0
	fi
	echo "FAIL $name: exit $rc (want $want)${miss:+, no line matching$miss}"
	sed 's/^/    /' <<<"$out" | cut -c1-200 | head -40
	fail=$((fail + 1))
	return 1
}

skip() {
	echo "SKIP $1: $2"
	skip=$((skip + 1))
}

have_cc=false
if command -v cc >/dev/null && [ -f /usr/include/sqlite3.h ]; then
	have_cc=true
fi
cat >prog.c <<'EOF'
#include <sqlite3.h>
#include <stdio.h>

int main(void)
{
	sqlite3 *db;

	if (sqlite3_open_v2(":memory:", &db, SQLITE_OPEN_READWRITE, NULL))
		return 1;
	printf("%s\n", sqlite3_libversion());
	return sqlite3_close(db);
}
EOF

VER='version 3\.[0-9]+\.[0-9]+'
CAN='^verdict: ALEX can interpose'
CANNOT='^verdict: ALEX cannot interpose'

# --- the sqlite3 shell and python3 -----------------------------------------
if [ -x /usr/bin/sqlite3 ]; then
	expect sqlite3-shell 0 '^linkage: dynamic' "^sqlite: [^ ]*/libsqlite3\.so[^:]*: shared library libsqlite3\.so\.0, $VER" \
		'^sqlite options: .*THREADSAFE=' '^sqlite imports: .*pwrite' "$CAN /usr/bin/sqlite3$" -- /usr/bin/sqlite3
	expect json 0 '"verdict":"can"' '"exit":0' "\"version\":\"3\.[0-9]+\.[0-9]+\"" -- --json /usr/bin/sqlite3
	if command -v python3 >/dev/null; then
		"${DOCTOR[@]}" --json /usr/bin/sqlite3 >out.json
		if python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); sys.exit(not (d["verdict"] == "can" and d["sqlite"][0]["options"]))' out.json; then
			echo "PASS json-parses"
			pass=$((pass + 1))
		else
			echo "FAIL json-parses: not one valid JSON object with a verdict"
			fail=$((fail + 1))
		fi
	fi
	printf '#!/usr/bin/sqlite3 -batch\nselect 1;\n' >script.sql
	chmod +x script.sql
	expect script 0 '^script: #!/usr/bin/sqlite3 -batch' '^program: /usr/bin/sqlite3' "$CAN" -- ./script.sql
else
	skip sqlite3-shell "/usr/bin/sqlite3 not installed"
fi

py=""
for p in /usr/bin/python3 /usr/local/bin/python3; do
	if [ -x "$p" ] && head -c 4 "$p" | grep -q ELF; then
		py=$p
		break
	fi
done
if [ -n "$py" ]; then
	expect python3 0 '^python module: .*/lib-dynload/_sqlite3[^ ]*\.so' \
		"^sqlite: .*(Python module|libsqlite3).*$VER" "$CAN" -- "$py"
	printf '#!/usr/bin/env python3\nimport sqlite3\n' >script.py
	chmod +x script.py
	PATH=$(dirname "$py"):/usr/bin:/bin expect script-env 0 '^script: #!/usr/bin/env python3' '^python module: ' "$CAN" -- ./script.py
else
	skip python3 "no python3 ELF binary in /usr/bin or /usr/local/bin"
fi

# --- C programs: shared, embedded, static, setuid --------------------------
if $have_cc; then
	cc prog.c -o dyn -lsqlite3 &&
		expect c-libsqlite3 0 "^sqlite: [^ ]*/libsqlite3\.so[^:]*: shared library libsqlite3\.so\.0, $VER" "$CAN" -- ./dyn
	if cc prog.c -o emb -Wl,-Bstatic -lsqlite3 -Wl,-Bdynamic -lm -ldl -lpthread 2>/dev/null ||
	   cc -no-pie prog.c -o emb -Wl,-Bstatic -lsqlite3 -Wl,-Bdynamic -lm -ldl -lpthread; then
		expect c-embedded 0 "^sqlite: \./emb: embedded in the program, $VER, source id 20[0-9][0-9]-" \
			'^sqlite options: \./emb: .*THREADSAFE=' '^sqlite imports: \./emb: .*open.*pwrite' "$CAN" -- ./emb
		strip -o emb-stripped emb &&
			expect c-embedded-stripped 0 "^sqlite: \./emb-stripped: embedded in the program, $VER" "$CAN" -- ./emb-stripped
	else
		skip c-embedded "could not link libsqlite3.a"
	fi
	if cc -static prog.c -o static -lsqlite3 -lm -ldl -lpthread 2>/dev/null; then
		expect c-static 1 '^linkage: static$' "$CANNOT \./static: statically linked" -- ./static
	else
		skip c-static "no static libc"
	fi
	cp dyn setuid && chmod u+s setuid &&
		expect setuid 1 '^privileges: setuid' "$CANNOT \./setuid: setuid" -- ./setuid
	cp dyn setgid && chmod g+sx setgid &&
		expect setgid 1 '^privileges: setgid' "$CANNOT \./setgid: setgid" -- ./setgid
	cp dyn caps
	if command -v setcap >/dev/null && setcap cap_net_raw+ep caps 2>/dev/null; then
		expect capabilities 1 '^privileges: file capabilities' "$CANNOT \./caps: file capabilities" -- ./caps
	else
		skip capabilities "setcap missing or not allowed here"
	fi
else
	skip c-programs "no cc or no sqlite3.h (libsqlite3-dev)"
fi

# --- the library search: $ORIGIN in RUNPATH and RPATH, LD_LIBRARY_PATH -----
if $have_cc; then
	mkdir -p o/lib
	printf '#include <sqlite3.h>\nconst char *drv(void) { return sqlite3_libversion(); }\n' >drfoo.c
	printf 'const char *drv(void);\nint main(void) { return !drv(); }\n' >main.c
	cc -shared -fPIC drfoo.c -o o/lib/libdrfoo.so -lsqlite3 &&
	cc main.c -o o/runpath -Lo/lib -ldrfoo -Wl,--enable-new-dtags,-rpath,'$ORIGIN/lib' &&
	cc main.c -o o/rpath -Lo/lib -ldrfoo -Wl,--disable-new-dtags,-rpath,'$ORIGIN/lib' &&
	cc main.c -o o/plain -Lo/lib -ldrfoo && {
		expect origin-runpath 0 "^library: libdrfoo\.so => $tmp/o/lib/libdrfoo\.so$" \
			'^library: libsqlite3\.so\.0 => .* \(needed by libdrfoo\.so\)' "$CAN" -- o/runpath
		expect origin-rpath 0 "^library: libdrfoo\.so => $tmp/o/lib/libdrfoo\.so$" "$CAN" -- o/rpath
		LD_LIBRARY_PATH=$tmp/o/lib expect ld-library-path 0 "^library: libdrfoo\.so => $tmp/o/lib/libdrfoo\.so$" "$CAN" -- o/plain
		LD_LIBRARY_PATH= expect missing-library 2 '^missing: libdrfoo\.so \(needed by .*\): not found' \
			'^verdict: cannot tell: no SQLite found, and libdrfoo\.so .* is missing' -- o/plain
	}
	# /etc/ld.so.cache: a library found through it alone, outside the
	# default directories (none such on some machines: then skipped)
	cached=$(ldconfig -p 2>/dev/null | awk '/x86-64/ && $NF ~ /^\// { print $NF }' |
		grep -vE '^(/usr)?/lib(/x86_64-linux-gnu)?/[^/]+$' | head -1)
	printf 'int main(void) { return 0; }\n' >empty.c
	if [ -n "$cached" ] && cc empty.c -o cached -Wl,--no-as-needed -L"$(dirname "$cached")" \
		-l:"$(basename "$cached")" 2>/dev/null; then
		soname=$(readelf -d cached | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | head -1)
		expect ld-so-cache 2 "^library: $soname => $(dirname "$cached")/" -- ./cached
	else
		skip ld-so-cache "no library in /etc/ld.so.cache outside the default directories"
	fi
	# a Node addon is a shared object: this one stands in for better-sqlite3
	cp o/lib/libdrfoo.so addon.node
	expect addon-standin 0 '^linkage: shared-object' '^sqlite: .*libsqlite3\.so' "$CAN" -- ./addon.node
fi
addon=$(find /usr/lib/node_modules /usr/local/lib/node_modules "$HOME/.npm" "$HOME/node_modules" \
	-name better_sqlite3.node -type f 2>/dev/null | head -1)
if [ -n "$addon" ]; then
	expect better-sqlite3 0 '^sqlite: ' "$CAN" -- "$addon"
else
	skip better-sqlite3 "no better_sqlite3.node on disk (not installed by this test)"
fi

# --- Go -------------------------------------------------------------------
if command -v go >/dev/null; then
	export GOCACHE=$tmp/gocache GOPATH=$tmp/gopath GOFLAGS=-mod=mod GOPROXY=off GOSUMDB=off GOTOOLCHAIN=local
	mkdir -p hello
	printf 'module example.com/hello\n\ngo 1.19\n' >hello/go.mod
	printf 'package main\n\nimport "fmt"\n\nfunc main() { fmt.Println("hello") }\n' >hello/main.go
	# pure Go without SQLite links statically: exit 1, the reason is static
	(cd hello && go build -o ../hello-go .) &&
		expect go-pure-nosqlite 1 '^go: go1\.[0-9]+' '^sqlite: none found' \
			"$CANNOT \./hello-go: statically linked \(a Go program" -- ./hello-go
	if $have_cc; then
		mkdir -p cgo
		printf 'module example.com/cgosqlite\n\ngo 1.19\n' >cgo/go.mod
		printf 'package main\n\n// #cgo LDFLAGS: -lsqlite3\n// #include <sqlite3.h>\nimport "C"\nimport "fmt"\n\nfunc main() { fmt.Println(C.GoString(C.sqlite3_libversion())) }\n' >cgo/main.go
		(cd cgo && go build -o ../cgo-go .) &&
			expect go-cgo-libsqlite3 0 '^go: go1\.[0-9]+.*CGO_ENABLED=1' "^sqlite: .*libsqlite3\.so.*$VER" "$CAN" -- ./cgo-go
		# a module named modernc.org/sqlite, pure Go, stands in for the real
		# one (no network here); cgo makes the program dynamic
		mkdir -p modernc pure
		printf 'module modernc.org/sqlite\n\ngo 1.19\n' >modernc/go.mod
		printf 'package sqlite\n\nfunc Version() string { return "3.40.1" }\n' >modernc/sqlite.go
		printf 'module example.com/pure\n\ngo 1.19\n\nrequire modernc.org/sqlite v1.20.0\n\nreplace modernc.org/sqlite => ../modernc\n' >pure/go.mod
		printf 'package main\n\n// int one(void) { return 1; }\nimport "C"\nimport (\n\t"fmt"\n\t"modernc.org/sqlite"\n)\n\nfunc main() { fmt.Println(sqlite.Version(), C.one()) }\n' >pure/main.go
		(cd pure && go build -o ../pure-go .) &&
			expect go-pure-sqlite 1 '^linkage: dynamic' '^go sqlite: modernc\.org/sqlite v1\.20\.0 \(pure Go' \
				"$CANNOT \./pure-go: its SQLite is pure Go" -- ./pure-go
	fi
	mattn=/usr/share/gocode/src/github.com/mattn/go-sqlite3
	if $have_cc && [ -f $mattn/go.mod ]; then
		mkdir -p mattn
		printf 'module example.com/mattn\n\ngo 1.19\n\nrequire github.com/mattn/go-sqlite3 v1.14.16\n\nreplace github.com/mattn/go-sqlite3 => %s\n' $mattn >mattn/go.mod
		printf 'package main\n\nimport (\n\t"database/sql"\n\t"fmt"\n\n\t_ "github.com/mattn/go-sqlite3"\n)\n\nfunc main() { db, err := sql.Open("sqlite3", ":memory:"); fmt.Println(db, err) }\n' >mattn/main.go
		(cd mattn && go build -o ../mattn-go .) &&
			expect go-mattn 0 '^go sqlite: github\.com/mattn/go-sqlite3 .*C SQLite through cgo' '^sqlite: ' "$CAN" -- ./mattn-go
	else
		skip go-mattn "golang-github-mattn-go-sqlite3-dev not installed"
	fi
else
	skip go "go not installed"
fi

# --- other libcs, io_uring, no SQLite ---------------------------------------
if command -v musl-gcc >/dev/null; then
	printf 'int main(void) { return 0; }\n' >m.c
	musl-gcc m.c -o musl 2>/dev/null && readelf -l musl 2>/dev/null | grep -q ld-musl &&
		expect musl 1 '^libc: musl' "$CANNOT \./musl: musl libc" -- ./musl
	# musl-gcc may link statically only, then there is nothing to check
else
	skip musl "musl-gcc not installed"
fi
if $have_cc && [ -f /usr/include/liburing.h ]; then
	printf '#include <liburing.h>\n#include <sqlite3.h>\nint main(void) { struct io_uring r; io_uring_queue_init(2, &r, 0); return !sqlite3_libversion(); }\n' >u.c
	cc u.c -o uring -luring -lsqlite3 &&
		expect liburing 0 '^io_uring: liburing linked' '^note: .*uses io_uring' "$CAN" -- ./uring
else
	skip liburing "liburing-dev not installed"
fi
[ -x /bin/true ] && expect no-sqlite 2 '^sqlite: none found' '^verdict: cannot tell: no SQLite found' -- /bin/true

# --- errors: one line naming the file, exit 2 --------------------------------
expect missing-file 2 "^alex doctor: $tmp/nope: No such file or directory$" -- "$tmp/nope"
echo 'not a program' >text
expect not-elf 2 '^alex doctor: \./text: not an ELF file$' -- ./text
printf '#!/usr/bin/env no-such-interpreter-xyz\n' >noint
chmod +x noint
expect no-interpreter 2 '^alex doctor: \./noint: the interpreter of its #! line is not found$' -- ./noint
expect directory 2 '^alex doctor: /: not a regular file$' -- /
expect not-in-path 2 '^alex doctor: no-such-program-xyz: not found in PATH$' -- no-such-program-xyz
expect json-error 2 '^\{"program":".*nope","error":"No such file or directory","verdict":"unknown","exit":2\}$' -- --json "$tmp/nope"
expect usage 2 '^usage: alex doctor' --

# --- every name libalex.so exports is one the doctor looks for --------------
if [ -f "$top/preload/libalex.map" ] && [ -f "$top/tools/doctor/elf.c" ]; then
	names=$(sed -n '/global:/,/local:/p' "$top/preload/libalex.map" | tr ' ;' '\n\n' |
		grep -E '^[_a-z0-9]+$' | grep -v global)
	absent=""
	for n in $names; do
		grep -q "\"$n\"" "$top/tools/doctor/elf.c" || absent="$absent $n"
	done
	if [ -z "$absent" ]; then
		echo "PASS hooked-names"
		pass=$((pass + 1))
	else
		echo "FAIL hooked-names: in preload/libalex.map, not in tools/doctor/elf.c:$absent"
		fail=$((fail + 1))
	fi
fi

echo "doctor: $pass passed, $fail failed, $skip skipped"
if [ $fail -gt 0 ]; then
	exit 1
fi
# a check that could not run (a tool or package missing) is a skip, never a
# pass: the whole script reports skipped, with what ran (tests/run-test)
if [ $pass -eq 0 ] || [ $skip -gt 0 ]; then
	[ -z "${CHECK_SKIP_FILE:-}" ] ||
		echo "$skip checks could not run here (see SKIP lines); $pass others passed" >"$CHECK_SKIP_FILE"
	exit 77
fi
exit 0
