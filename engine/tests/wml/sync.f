# block/wakeup and semblock/sempost between threads.
set $dir=/tmp
define process name=p
{
  thread name=waiter
  {
    flowop block name=blk
  }
  thread name=waker
  {
    flowop wakeup name=wk,target=blk
    flowop delay name=d,value=0
  }
  thread name=consumer
  {
    flowop semblock name=sb,value=1,highwater=4
  }
  thread name=producer
  {
    flowop sempost name=sp,target=sb,value=1,blocking
  }
}
run 60
