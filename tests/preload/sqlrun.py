"""The Python client of the differential tests: runs an SQL script with the
standard library's sqlite3 (the system's libsqlite3) via executescript."""
import sqlite3
import sys

if len(sys.argv) != 3:
    sys.exit("usage: sqlrun.py DB SCRIPT")
con = sqlite3.connect(sys.argv[1], isolation_level=None)
with open(sys.argv[2]) as f:
    con.executescript(f.read())
con.close()
