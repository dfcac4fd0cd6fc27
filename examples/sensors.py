"""sensors.py - a logger that commits every reading on its own, the way
small devices do.  Under ALEX (`alex-run python3 sensors.py readings.db`)
each commit is one sequential log append and one fdatasync instead of
SQLite's four syncs; the code is plain sqlite3."""
import sqlite3
import sys

db = sqlite3.connect(sys.argv[1] if len(sys.argv) > 1 else "readings.db",
                     isolation_level=None)  # autocommit: one commit per reading
db.execute("create table if not exists reading(t integer primary key, sensor text, value real)")
for t in range(200):
    db.execute("insert into reading(sensor, value) values(?, ?)", ("temp%d" % (t % 4), 20 + t % 7))
n, avg = db.execute("select count(*), round(avg(value), 2) from reading").fetchone()
print("%d readings, average %s" % (n, avg))
db.close()  # the last close copies the log back into readings.db
