# eventlimit paced by the event generator: one op per event.
set $rate=30
define process name=p
{
  thread name=paced
  {
    flowop eventlimit name=el
  }
}
eventgen rate=$rate
run 60
