# chaos.py DIR SECONDS SLOTSPEC...   slot spec: client:envs  e.g. py:ALEX_SYNC=normal  pl:ALEX_SYNC=full
# runs each slot as a writer, SIGKILLs a random one every 0.05-0.5 s, restarts it; then checks.
import os, sys, subprocess, random, time, signal, glob
d, secs = sys.argv[1], float(sys.argv[2]); slots = sys.argv[3:]
R = os.path.dirname(os.path.abspath(__file__)); B = os.path.abspath(os.environ.get("ALEX_BUILD", os.path.join(R, "../../../build")))
LIB = B + "/libalex.so"
os.makedirs(d, exist_ok=True); db = d + "/t.db"
env0 = dict(os.environ, LD_PRELOAD="" if os.environ.get("NOALEX") else LIB, ALEX_SYNC="normal")
subprocess.run(["sqlite3", db, "create table if not exists t(id integer primary key, v blob)"], env=env0, check=True)
tagc = [int(os.environ.get("TAG0", "1"))]
def start(spec):
    cl, _, envs = spec.partition(":")
    e = dict(env0)
    for kv in filter(None, envs.split(",")):
        k, v = kv.split("="); e[k] = v
    tag = tagc[0]; tagc[0] += 1
    cmd = {"py": ["python3", R + "/w.py", db, str(tag)], "pywal": ["python3", R + "/w.py", db, str(tag), "wal"],
           "pyslow": ["python3", R + "/w.py", db, str(tag), "slow"],
           "pyvac": ["python3", R + "/w.py", db, str(tag), "vac"],
           "pyreopen": ["python3", R + "/w.py", db, str(tag), "reopen"],
           "pl": ["perl", R + "/w.pl", db, str(tag)], "tcl": ["tclsh", R + "/w.tcl", db, str(tag)]}[cl]
    p = subprocess.Popen(cmd, env=e, stdout=open("%s/ack.%d" % (d, tag), "w"), stderr=open("%s/err.%d" % (d, tag), "w"))
    with open(d + "/tags", "a") as fh:
        fh.write("%d %s %.2f\n" % (tag, spec, time.time()))
    return p
procs = [start(s) for s in slots]
t0 = time.time(); kills = 0; stale = 0; plainok = 0; plainref = 0
def acked():
    n = 0
    for f in glob.glob(d + "/ack.*"):
        with open(f) as fh:
            n += sum(1 for l in fh if l.endswith("\n"))
    return n
while time.time() - t0 < secs:
    time.sleep(random.uniform(0.05, 0.5))
    if os.environ.get("NOKILL"):
        continue
    i = random.randrange(len(procs))
    if os.environ.get("KILLSLOT"):
        i = int(os.environ["KILLSLOT"])
    procs[i].send_signal(signal.SIGKILL); procs[i].wait(); kills += 1
    procs[i] = start(slots[i])
    if subprocess.run("grep -Elq 'malformed|checksum|readonly' %s/err.* 2>/dev/null" % d, shell=True).returncode == 0 and os.environ.get("STOPBAD"):
        for p in procs: p.send_signal(signal.SIGKILL); p.wait()
        subprocess.run("cp -a %s %s.bad" % (d, d), shell=True)
        print("MALFORMED seen at %.1fs after %d kills; state in %s.bad" % (time.time() - t0, kills, d), flush=True)
        break
    if os.environ.get("PLAIN") and random.random() < 0.3:
        a = acked()
        r = subprocess.run(["sqlite3", "-cmd", ".timeout 2000", db, "select count(*) from t"], capture_output=True, text=True, env={k: v for k, v in os.environ.items() if k != "LD_PRELOAD"})
        if r.returncode == 0:
            plainok += 1
            if int(r.stdout) < a: stale += 1; print("STALE plain read", r.stdout.strip(), "acked before", a, flush=True)
        elif "not a database" in r.stderr: plainref += 1
        else: print("plain:", r.stderr.strip(), flush=True)
for p in procs: p.send_signal(signal.SIGTERM if os.environ.get("TERM") else signal.SIGKILL); p.wait()
print("kills", kills, "plain ok", plainok, "refused", plainref, "stale", stale)
ids = set()
for f in glob.glob(d + "/ack.*"):
    with open(f) as fh:
        ids |= {int(l) for l in fh if l.endswith("\n")}
r = subprocess.run(["sqlite3", db, "pragma integrity_check", "select id from t"], capture_output=True, text=True, env=env0)
got = r.stdout.split("\n"); print("integrity:", got[0], r.stderr.strip()[:300])
have = {int(x) for x in got[1:] if x.strip()}
miss = ids - have
print("acked", len(ids), "present", len(have), "MISSING", len(miss), sorted(miss)[:10])
left = glob.glob(db + "-*"); print("left beside:", left)
r = subprocess.run(["sqlite3", db, "pragma integrity_check; select count(*) from t"], capture_output=True, text=True)
print("plain after:", r.stdout.split(), r.stderr.strip())
errs = subprocess.run("cat %s/err.* | grep -v '^$' | sort | uniq -c | sort -rn | head" % d, shell=True, capture_output=True, text=True).stdout
print("stderr of clients:\n" + errs)
# the verdict: every acknowledged id there, the file whole for ALEX and,
# once ALEX closed it, for plain SQLite
# and no client told an error it should never see (an open that failed
# beside a merge said "disk I/O error": review)
plain = r.stdout.split()
said = subprocess.run("grep -Ehl 'disk I/O error|malformed|readonly' %s/err.*" % d, shell=True,
                      capture_output=True, text=True).stdout.split()
if said:
    print("errors told to clients in:", " ".join(said))
sys.exit(0 if got[0] == "ok" and not miss and plain[:1] == ["ok"] and not said else 1)
