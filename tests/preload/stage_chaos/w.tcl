package require sqlite3
lassign $argv db tag
sqlite3 h $db
h timeout 60000
set n 0
fconfigure stdout -buffering line
while {1} { set id [expr {$tag*1000000+$n}]; incr n
  if {[catch {h eval {begin immediate; insert into t values($id, randomblob(abs(random())%1500)); commit}} e]} {
    puts stderr "ERR $e"; catch {h eval rollback}; continue }
  puts $id
}
