use DBI; my ($db,$tag)=@ARGV; $|=1;
my $h=DBI->connect("dbi:SQLite:dbname=$db","","",{RaiseError=>0,PrintError=>1,AutoCommit=>1});
$h->sqlite_busy_timeout(60000);
my $n=0;
while(1){ my $id=$tag*1000000+$n; $n++;
  $h->do("begin immediate") or next;
  if(!$h->do("insert into t values(?, ?)", undef, $id, "x" x (1+int(rand(2000))))){ $h->do("rollback"); next;}
  if($h->do("commit")){ print "$id\n"; } else { $h->do("rollback"); }
}
